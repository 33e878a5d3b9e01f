"""How a server process's garbage collector runs (docs/adr/0166).

CPython collects its youngest objects every 700 new containers (lists,
dicts, objects), and every tenth such pass the middle generation as well.
A turn makes tens of thousands of containers that live as long as the turn
(its messages, the checkpoint's copies of them, rendered fragments), so
most young passes found nearly everything alive, moved it a generation up,
and the middle generation's passes walked it again. Under 200 turns at once
that was 0.9-1.4 s of one core in a 16-second round, and the full passes
it led to stopped every turn of the process for up to 200 ms each: a
streaming answer's tokens then reached the pages in bursts.

A young pass every 50 000 new containers does the same work about seventy
times less often, so most of what a pass would have walked is already gone
by then. It holds at most that many young objects besides (a few MB).
"""

import gc

YOUNG_PASS_EVERY = 50_000
# CPython's own ratios between the generations' passes.
MIDDLE_PASS_EVERY_YOUNG = 10
FULL_PASS_EVERY_MIDDLE = 10


def tune_for_serving() -> None:
    """Once the process has loaded what it keeps for its lifetime (modules,
    settings, compiled templates): set that aside from every collection
    (gc.freeze), which otherwise walks it again and again under load, and
    collect the young generation less often (above)."""
    gc.freeze()
    gc.set_threshold(YOUNG_PASS_EVERY, MIDDLE_PASS_EVERY_YOUNG, FULL_PASS_EVERY_MIDDLE)
