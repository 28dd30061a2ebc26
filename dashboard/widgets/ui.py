"""Streamlit building blocks every page uses: text from a run or a file shown safely, errors shown in the page, a
chart, the call-budget notice above a Start button, and a Start click that remembers what it started. The
sidebar is dashboard.widgets.sidebar; the pattern and run controls are dashboard.widgets.controls; what shows one run (counters,
invariant cards, the call log, export) is dashboard.widgets.panels; charts come from dashboard.figures.charts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
import streamlit as st

from dashboard.text.plain import plain
from engine.backends.backend import BackendSpec
from engine.errors import BadInput, LabError

if TYPE_CHECKING:  # imported for real, it would read the DDBLAB_* caps before streamlit_app has checked them
    from dashboard.widgets.registry import Registry

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"], "responsive": True}


def show_error(error: BaseException, where: Any = None) -> None:
    """A LabError as 'problem' in bold and its fix; anything else as one line (never a traceback)."""
    where = where or st
    if isinstance(error, LabError):
        where.error(
            f"**{plain(error.problem)}**" + (f"  \n{plain(error.fix)}" if error.fix else ""), icon=":material/error:"
        )
    else:
        where.error(f"**{plain(f'{type(error).__name__}: {error}')}**", icon=":material/error:")


def chart(fig: go.Figure, key: str, *, screen_tall: bool = False, on_select: Callable[[], None] | None = None) -> None:
    """A chart; `screen_tall`: no height of its own, so the page's CSS sizes it to the screen (presenter view);
    `on_select`: called when a click selects a point of it (st.session_state[key].selection says which)."""
    picks: dict[str, Any] = {} if on_select is None else {"on_select": on_select, "selection_mode": "points"}
    if screen_tall:
        fig.update_layout(height=None, autosize=True)
        config = {**PLOTLY_CONFIG, "responsive": True}
        st.plotly_chart(fig, key=key, theme=None, config=config, height="stretch", **picks)
        return
    st.plotly_chart(fig, key=key, theme=None, config=PLOTLY_CONFIG, **picks)


def budget_notice(registry: Registry, spec: BackendSpec) -> bool:
    """Above a Start button: a spent call budget (new runs are refused; how to get more) or a low one.
    True when spent, so the page can disable Start."""
    for budget in registry.budgets(spec):
        try:
            budget.check()
        except BadInput as e:
            st.warning(f"**{e.problem}**. New runs are refused.  \nTo run more, {e.fix}.", icon=":material/block:")
            return True
        left = budget.left()
        if left < budget.limit // 10:  # low: say so before a run comes out shorter than asked
            st.caption(
                f"{left:,} {budget.what} left of the dashboard's budget of {budget.limit:,} (shared by every "
                "browser session): a run stops when it is spent."
            )
    return False


def start_and_remember(start: Callable[[], str], state_key: str, param: str) -> None:
    """A Start click: start() what the page starts, keep its id in the session and the URL (so a refresh or a
    bookmark brings it back) and redraw; a refusal shows its problem and fix instead."""
    try:
        started = start()
    except LabError as e:
        show_error(e)
        return
    st.session_state[state_key] = started
    st.query_params[param] = started
    st.rerun()
