"""29 · Distributed locking's view: the lease Gantt shows the racy lease letting stale writes land after a takeover,
and the fencing token refusing them."""

from __future__ import annotations

from dashboard.state.verdicts import flagged_calls
from dashboard.views.distributed_locking import LeaseEvents, lease_gantt
from tests.dashboard.helpers import frame, names, valid


def test_lease_gantt_racy_lease_lets_stale_writes_land() -> None:
    f, summary = frame("distributed-locking-racy")
    leases = LeaseEvents.of(f).timeline(flagged_calls(summary["invariants"]))
    assert len(leases.holds) == 12
    assert (leases.holds["ended"] == "expired").sum() == 3 == leases.holds["takeover"].sum()
    kinds = leases.events["kind"].value_counts()
    assert kinds["stale write landed"] == 3 and kinds["zombie release refused"] == 3
    fig = valid(lease_gantt(f, summary["invariants"], lanes=4))
    assert fig.layout.meta["stale_landed"] == 3 and "takeover after expiry" in names(fig)


def test_lease_gantt_fenced_refuses_stale_writes() -> None:
    f, summary = frame("distributed-locking-safe")
    fig = valid(lease_gantt(f, summary["invariants"], lanes=4))
    assert fig.layout.meta["stale_landed"] == 0 and fig.layout.meta["stale_refused"] == 2
    tokens = next(t for t in fig.data if t.name == "fencing token")
    assert list(tokens.text)[:3] == ["t1", "t2", "t3"]
    holds = LeaseEvents.of(f).timeline().holds
    assert (holds["start"].diff().dropna() > 0).all()
    assert (holds["start"].iloc[1:].to_numpy() >= holds["end"].iloc[:-1].to_numpy() - 1e-3).all()  # one holder


def test_one_lease_reads_as_one_and_its_holder_by_the_timelines_name() -> None:
    f, summary = frame("distributed-locking-racy")
    first = int(f.index[(f["action"] == "acquire") & (f["outcome"] == "ok")][0])
    fig = valid(lease_gantt(f.loc[:first], [], lanes=4))  # up to the first lease: one holder, nothing taken over
    title = fig.layout.title.subtitle.text.replace("<br>", " ")
    assert "1 lease ·" in title and "0 takeovers" in title and "1 leases" not in title, title
    assert fig.layout.yaxis.title.text == "client"  # as on the timeline, whose lanes are the client numbers
    assert list(fig.layout.yaxis.ticktext) == ["0", "1", "2", "3"]
    held = next(t for t in fig.data if t.type == "bar")
    assert all(h.startswith("client ") for h in held.customdata), list(held.customdata)
