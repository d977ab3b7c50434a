"""The graded task suite on the simulated robot (``loopact eval``; issue 20, SPEC H4).

:mod:`~loopact.eval.tasks` holds the tasks, :mod:`~loopact.eval.graders` the graders (ground
truth only), :mod:`~loopact.eval.runner` runs a task on a fresh simulated robot and
:mod:`~loopact.eval.report` prints and writes the results. docs/eval.md describes it.
"""
