"""Action-text mode in a task: one ``name(args)`` action per round until ``finishtask()``
(SPEC A5).

The parsing of the model's text against the tool schemas is :mod:`loopact.agent.actiontext`;
this module runs the rounds: each request offers no native tools but carries the action
catalogue in its system message, the first action of the answer runs through the task's
dispatcher, and its result (and images) goes back to the same conversation as a user message.
An answer with nothing to run is the reply, unless it wrote an unknown action, an action whose
arguments cannot be used (answered with a failed result) or an action only inside a sentence:
then the model is told and the round counts as invalid (SPEC A3), so a model that keeps doing
it ends on the ``invalid_rounds`` bound, never with its broken text as a "completed" reply.
The task's policy sees what each round ran (:meth:`~loopact.agent.turns.TaskPolicy.round_done`)
and composes the reply from the answer (with ``split_steps``, the local brain, what ran after
a motion, a write or a failed last call, as in the other modes).
"""

from __future__ import annotations

from loopact.agent.actiontext import (
    empty_feedback,
    observation_text,
    parse_actions,
    render_catalogue,
)
from loopact.agent.rounds import TaskRounds
from loopact.agent.stream import result_text
from loopact.agent.turns import Outcomes
from loopact.errors import BoundReached
from loopact.i18n import t
from loopact.llm.messages import Message
from loopact.tools.base import ToolResult

__all__ = ["action_body"]


async def action_body(run: TaskRounds) -> tuple[str, Outcomes]:
    """Action-text mode's rounds of a turn: one action per round until ``finishtask()`` (A5).

    Args:
        run: The task's rounds; the turn's user message is already in its history.

    Returns:
        The progress text around ``finishtask()`` (or "done"), or the answer of a round
        that wrote no action at all; and every ``(call, result)`` pair the rounds ran.

    Raises:
        BoundReached: The round limit, the invalid-round guard or the token budget tripped.
        asyncio.CancelledError: The task was preempted; a running action was stopped and
            its cancellation recorded in the history.
    """
    first, start = run.tool_rounds, len(run.ran)  # a summary request is not a round (A2)
    asked_again = False
    while True:
        await _check_rounds(run, run.tool_rounds - first)
        run.conv.pull_sources(run.task_id)
        specs = run.env.tool_specs()
        system = run.system_with(render_catalogue(specs))
        done, _, _ = await run.run_round((), system=system)
        parse = parse_actions(done.message.text, specs)
        if parse.finished:
            return parse.progress.strip() or t("task.done", run.lang), run.ran[start:]
        if parse.call is None:
            feedback = parse.feedback() if parse.has_action else parse.mention_feedback()
            if not feedback and not done.message.text.strip() and not asked_again:
                asked_again = True  # an empty answer is no answer: ask once more
                run.conv.append(Message.user(empty_feedback()))
                continue
            if not feedback:
                return done.message.text, run.ran[start:]
            # an unknown action, or an action only a sentence mentioned: nothing ran
            run.state.invalid_streak += 1
            run.conv.append(Message.user(feedback))
            continue
        call = parse.call
        try:
            if call.error:  # arguments that could not be used: answered, never run
                result, invalid = await run.refuse_one(call, call.error), True
            else:
                result, invalid = await run.dispatch_one(call)
        except BaseException:
            cancelled = ToolResult.failure(t("tool.cancelled", run.lang))
            run.conv.append(
                Message.user(observation_text(call, False, result_text(cancelled), parse))
            )
            raise
        run.state.invalid_streak = run.state.invalid_streak + 1 if invalid else 0
        run.policy.round_done(run.ran[start:])
        text = observation_text(call, result.ok, result_text(result), parse)
        run.conv.append(Message.user(text, result.images))
        run.check_tokens()


async def _check_rounds(run: TaskRounds, n: int) -> None:
    """:meth:`TaskRounds.check_rounds`, with the action lines of the final answer left out
    of the bound's text: they were not run, and the user should not read them as done.
    (A policy that answers a bound from what ran asks for no final answer: kept whole.)"""
    try:
        await run.check_rounds(n, run.bounds.max_rounds)
    except BoundReached as exc:
        if not run.policy.asks_final_answer:
            raise
        text = parse_actions(exc.text, run.env.tool_specs()).progress
        raise BoundReached(exc.name, text or exc.text) from None
