"""Judge checks grade through a local OpenAI-compatible server, replay offline, and never guess a verdict."""

import json

import pytest
from llmserver import LocalLLM

from graders import grade, load_rubric
from graders.errors import JudgeRefused, RubricError
from graders.judge import Judge
from worlds.llm import ChatModel
from worlds.schema import Post


def post(world, channel_id, text):
    world.add(Post(channel_id=channel_id, author_id=1, message=text, created_at=world.clock.now()))


def rubric():
    return load_rubric(
        {
            "id": "reply-quality",
            "version": 1,
            "description": "A status reply that answers the question.",
            "checks": [
                {"id": "posted", "description": "posted in ~eng", "fn": "post_in_channel",
                 "params": {"channel": "eng", "pattern": "deploy", "author": "actor"}},
                {"id": "polite", "description": "the reply is polite and clear", "kind": "judge", "fn": "judge",
                 "params": {"question": "Is the reply polite and clear?", "criteria": ["says when", "thanks"],
                            "evidence": ["posts:eng"], "scale": 4}},
            ],
        }
    )  # fmt: skip


def verdicts(request):
    """A scripted judge: 4 when the evidence says thanks, else 1; always JSON with a reason."""
    evidence = request["messages"][-1]["content"]
    assert request["temperature"] == 0.0
    score = 4 if "thanks" in evidence.lower() else 1
    return {"content": json.dumps({"verdict": score, "reason": f"scored {score} on the criteria"})}


def test_judge__grades_through_the_server_then_replays_offline(world, tmp_path):
    post(world, 2, "We deploy at 5pm today, thanks for waiting!")
    cache = tmp_path / "judge.jsonl"
    with LocalLLM(verdicts) as llm:
        judge = Judge(ChatModel("judge-model", base_url=llm.base_url, cache=cache), policy_model="policy-model")
        ctx = world.ctx()
        ctx.judge = judge
        score = grade(rubric(), ctx)
        assert len(llm.requests) == 1 and "We deploy at 5pm today" in llm.requests[0]["messages"][-1]["content"]
    polite = next(c for c in score.checks if c.id == "polite")
    assert polite.score == 1.0 and polite.evidence == "judged 4/4: scored 4 on the criteria"
    assert score.value == 1.0 and score.unjudged == () and "unjudged" not in score.to_json()
    offline = world.ctx()
    offline.judge = Judge(ChatModel("judge-model", cache=cache, replay_only=True), policy_model="policy-model")
    assert grade(rubric(), offline) == score  # the server is gone: the recorded verdict gives the same score


def test_judge__unjudged_is_reported_and_left_out_never_0_or_1(world, tmp_path):
    post(world, 2, "deploy done")
    score = grade(rubric(), world.ctx())  # no judge configured
    polite = next(c for c in score.checks if c.id == "polite")
    assert score.unjudged == ("polite",) and polite.evidence.startswith("unjudged: no judge")
    assert score.value == 1.0  # the rule check alone decides, the unknown verdict is not a 0
    assert score.to_json()["unjudged"] == ["polite"]
    with LocalLLM(lambda r: {"content": "I think it is fine"}) as llm:  # not a verdict
        ctx = world.ctx()
        ctx.judge = Judge(ChatModel("judge-model", base_url=llm.base_url, cache=tmp_path / "j.jsonl"))
        again = grade(rubric(), ctx)
    assert again.unjudged == ("polite",) and "JSON verdict" in again.checks[1].evidence
    ctx = world.ctx()
    ctx.judge = Judge(ChatModel("judge-model", cache=tmp_path / "empty.jsonl", replay_only=True))
    assert grade(rubric(), ctx).unjudged == ("polite",)  # a replay with no recorded verdict


def test_judge__a_model_may_not_judge_itself_and_bad_params_fail_at_load():
    with pytest.raises(JudgeRefused, match="is the policy model"):
        Judge(ChatModel("same-model"), policy_model="same-model")
    data = rubric().model_dump(mode="json")
    data["checks"][1]["params"]["evidence"] = ["screenshot:x"]
    with pytest.raises(RubricError, match="names no reader"):
        load_rubric(data)
    data["checks"][1]["params"] = {"question": "q", "evidence": ["mail"], "scale": 4, "pass_at": 9}
    with pytest.raises(RubricError, match="pass_at"):
        load_rubric(data)
