"""The cluster this session's new runs spread their clients over, as the sidebar's Cluster setting left it: read by
the controls (a pattern that cannot be spread says so there) without importing the sidebar and all it draws."""

from __future__ import annotations

import streamlit as st

CLUSTER_KEY = "cluster_address"


def current_cluster() -> str | None:
    """The cluster address new runs of this session spread their clients over, or None (this process)."""
    return st.session_state.get(CLUSTER_KEY) or None
