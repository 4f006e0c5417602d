"""The cost of delivering events: ecs_spatial's Outbox against esper.dispatch_event.

Every processor delivers its events through an Outbox (ecs_spatial/delivery.py), which adds
the exactly-once and deletion rules to what ``esper.dispatch_event`` does. This measures
both on the same 1,000 pair events to one handler that does nothing, as ns per event (the
best of several repetitions), for each role of event:

    python -m bench dispatch
    python -m bench dispatch --quick     # a smoke run

Wall-clock on a shared machine is noisy; callgrind counts instructions exactly. Run one
contender with ``--only`` and ``--repeat 0`` (set-up alone), then ``--repeat 1``, and take
the difference over ``20 * --events`` deliveries:

    valgrind --tool=callgrind python -m bench dispatch --only esper --repeat 1
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable, Sequence

import esper

from bench.record import add_output_options, machine, markdown_table, saved
from ecs_spatial.delivery import ENTER, EXIT, STAY, Outbox


def handler(a: int, b: int) -> None:
    """The handler: does nothing, so the figures are the delivery's own cost."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench dispatch", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", choices=["esper", "enters", "exits", "collisions"])
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 100 events, 2 repetitions"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.repeat = 100, 2
    esper.switch_world("bench_dispatch")
    esper.set_handler("bench_event", handler)
    ids = [esper.create_entity(object()) for _ in range(args.events + 1)]
    pairs = [(ids[i], ids[i + 1]) for i in range(args.events)]

    def esper_dispatch() -> None:
        dispatch = esper.dispatch_event
        for a, b in pairs:
            dispatch("bench_event", a, b)

    def outbox(role: str) -> None:
        box = Outbox()
        box.post("bench_event", role, pairs)
        box.deliver()

    contenders: dict[str, Callable[[], None]] = {
        "esper.dispatch_event": esper_dispatch,
        "Outbox, enters": lambda: outbox(ENTER),
        "Outbox, exits": lambda: outbox(EXIT),
        "Outbox, collisions": lambda: outbox(STAY),
    }
    if args.only is not None:  # for callgrind: one contender, no printing
        run = next(f for name, f in contenders.items() if args.only in name)
        for _ in range(args.repeat * 20):
            run()
        return 0
    with saved(args, "dispatch", argv):
        print(f"{machine()}, esper {esper.__version__}; {args.events} events, best of "
              f"{args.repeat}\n")
        base = 0.0
        rows = []
        for name, run in contenders.items():
            best = min(timeit.repeat(run, number=20, repeat=args.repeat)) / 20 / len(pairs) * 1e9
            base = base or best
            rows.append([name, f"{best:.1f}", f"{best / base:.2f}"])
        print(markdown_table(["delivery", "ns/event", "/ esper.dispatch_event"], rows, right=True))
    return 0

