"""The stream mapper: LangGraph stream parts → balanced AG-UI events."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

from agui.mapper import EventMapper


def kinds(events) -> list[str]:
    return [e.type.value for e in events]


def test_text_streams_into_one_message_and_closes_with_the_step():
    mapper = EventMapper("m-1")
    events = mapper.on_task({"id": "t1", "name": "answer"})
    events += mapper.on_message(AIMessageChunk(content="Hello "))
    events += mapper.on_message(AIMessageChunk(content="world"))
    events += mapper.on_task({"id": "t1", "name": "answer", "result": {}})
    assert kinds(events) == ["STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                             "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED"]
    assert {e.message_id for e in events if "TEXT" in e.type.value} == {"m-1"}
    assert mapper.text == "Hello world"


def test_streamed_tool_call_chunks_open_and_close_a_call():
    mapper = EventMapper("m-1")
    events = mapper.on_message(AIMessageChunk(content="", tool_call_chunks=[
        {"name": "kb_search", "args": '{"query"', "id": "c1", "index": 0}]))
    events += mapper.on_message(AIMessageChunk(content="", tool_call_chunks=[
        {"name": None, "args": ': "x"}', "id": None, "index": 0}]))
    events += mapper.on_message(ToolMessage(content="[]", tool_call_id="c1"))
    assert kinds(events) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS",
                             "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert events[0].tool_call_name == "kb_search"
    assert "".join(e.delta for e in events if e.type.value == "TOOL_CALL_ARGS") == '{"query": "x"}'


def test_a_whole_tool_call_message_is_three_events():
    mapper = EventMapper("m-1")
    events = mapper.on_message(AIMessage(content="", tool_calls=[
        {"name": "ask_input", "args": {"question": "?"}, "id": "c9"}]))
    assert kinds(events) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]


def test_a_tool_result_is_reported_once():
    mapper = EventMapper("m-1")
    result = ToolMessage(content="ok", tool_call_id="c1")
    assert kinds(mapper.on_message(result)) == ["TOOL_CALL_RESULT"]
    assert mapper.on_message(result) == []


def test_close_all_closes_what_is_open():
    mapper = EventMapper("m-1")
    mapper.on_task({"id": "t1", "name": "ask"})
    mapper.on_message(AIMessageChunk(content="Hi"))
    assert kinds(mapper.close_all()) == ["TEXT_MESSAGE_END", "STEP_FINISHED"]
    assert mapper.close_all() == []
