"""Model calls through the official openai client against a local server, recorded, then replayed offline."""

import json

import pytest
from llmserver import LocalLLM

from worlds.llm import ChatCache, ChatModel, Completion, LLMError, LLMMiss, LLMUnavailable

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tickets_get",
            "description": "Read a ticket.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        },
    }
]


def scripted(request):
    """Asks for a ticket first, then answers in words once a tool result is in the conversation."""
    if request["messages"][-1]["role"] == "tool":
        return {"content": f"The ticket says: {request['messages'][-1]['content']}"}
    return {"tool_calls": [{"name": "tickets_get", "arguments": json.dumps({"key": "OPS-7"})}]}


def conversation(model):
    messages = [{"role": "user", "content": "What does OPS-7 say?"}]
    first = model.complete(messages, tools=TOOLS)
    messages.append(first.message())
    messages.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": '{"title": "Disk full"}'})
    second = model.complete(messages, tools=TOOLS)
    return first, second


def test_chat_model__records_through_the_wire_then_replays_offline_bit_for_bit(tmp_path):
    cache = tmp_path / "llm.jsonl"
    with LocalLLM(scripted, api_key="sk-test-123") as llm:
        model = ChatModel("stub-model", base_url=llm.base_url, api_key="sk-test-123", cache=cache)
        first, second = conversation(model)
        assert len(llm.requests) == 2 and llm.requests[0]["tools"] == TOOLS
    assert first.tool_calls[0].name == "tickets_get" and json.loads(first.tool_calls[0].arguments) == {"key": "OPS-7"}
    assert first.finish_reason == "tool_calls" and first.usage["total_tokens"] > 0
    assert second.content == 'The ticket says: {"title": "Disk full"}'
    assert "sk-test-123" not in cache.read_text()  # the key is never recorded
    # the server is gone: a replay-only model gives the same completions from the cache alone
    offline = ChatModel("stub-model", cache=cache, replay_only=True)
    again = conversation(offline)
    assert [c.to_json() for c in again] == [first.to_json(), second.to_json()]
    assert all(c.cached for c in again) and offline.hits == 2 and offline.calls == 0


def test_chat_model__a_miss_without_an_endpoint_is_a_coded_error(tmp_path):
    model = ChatModel("stub-model", cache=tmp_path / "empty.jsonl", replay_only=True)
    with pytest.raises(LLMMiss) as err:
        model.complete([{"role": "user", "content": "hi"}])
    assert err.value.code == "llm_miss" and "--base-url" in str(err.value)
    with pytest.raises(LLMMiss):
        ChatModel("stub-model").complete([{"role": "user", "content": "hi"}])  # no cache, no endpoint


def test_chat_model__refusals_of_the_endpoint_are_llm_unavailable(tmp_path):
    with LocalLLM(scripted, api_key="right") as llm:
        wrong_key = ChatModel("m", base_url=llm.base_url, api_key="wrong", cache=tmp_path / "a.jsonl")
        with pytest.raises(LLMUnavailable, match="invalid api key"):
            wrong_key.complete([{"role": "user", "content": "hi"}])
        model = ChatModel("m", base_url=llm.base_url, api_key="right", cache=tmp_path / "b.jsonl")
        bad_tools = [{"type": "function", "function": {"name": "x", "parameters": {"type": "string"}}}]
        with pytest.raises(LLMUnavailable, match="JSON schema of type object"):
            model.complete([{"role": "user", "content": "hi"}], tools=bad_tools)
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()  # failures are not recorded
    gone = ChatModel("m", base_url=llm.base_url, cache=tmp_path / "c.jsonl")
    with pytest.raises(LLMUnavailable):
        gone.complete([{"role": "user", "content": "hi"}])


def test_chat_cache__sampling_parameters_are_part_of_the_key_and_a_bad_file_names_its_line(tmp_path):
    with LocalLLM(lambda r: {"content": f"t={r['temperature']}"}) as llm:
        model = ChatModel("m", base_url=llm.base_url, cache=tmp_path / "c.jsonl")
        cold = model.complete([{"role": "user", "content": "hi"}])
        warm = model.complete([{"role": "user", "content": "hi"}], temperature=0.7)
        assert (cold.content, warm.content) == ("t=0.0", "t=0.7") and len(llm.requests) == 2
        assert model.complete([{"role": "user", "content": "hi"}]).cached
    assert len(ChatCache(tmp_path / "c.jsonl")) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a", "response": {}}\nnot json\n')
    with pytest.raises(LLMError, match="bad.jsonl:2"):
        ChatCache(bad)


def test_completion__round_trips_its_recorded_form():
    c = Completion("hi", usage={"total_tokens": 3})
    assert Completion.from_json(c.to_json()) == c
    assert c.message() == {"role": "assistant", "content": "hi"}
