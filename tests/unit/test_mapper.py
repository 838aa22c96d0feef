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


def _mapped(graph, inputs, mode: str) -> list[dict]:
    """All events of a thread's segments, with messages from ``mode`` parts."""
    from langgraph.checkpoint.memory import InMemorySaver

    compiled = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    mapper, events = EventMapper("m-1"), []
    for graph_input in inputs:
        for kind, part in compiled.stream(graph_input, config, stream_mode=["tasks", mode]):
            if kind == "tasks":
                events += mapper.on_task(part)
            elif kind == "updates":
                events += mapper.on_update(part)
            else:
                events += mapper.on_message(part[0])
        events += mapper.close_all()
    return [e.model_dump(exclude={"timestamp"}) for e in events]


def test_whole_messages_from_updates_map_as_the_messages_mode_maps_them():
    """An agent without model tokens (``Agent.model_tokens``) reads its messages from
    the nodes' updates: the same events as LangGraph's messages mode gives."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command

    from agents import dev

    answers = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics"]},
               {"approved": True}]
    inputs = [dev.initial_state(dev.DevInput(topic="x"), "hi"),
              *(Command(resume=a) for a in answers)]
    by_messages = _mapped(dev.build(), inputs, "messages")
    assert _mapped(dev.build(), inputs, "updates") == by_messages
    assert [e["type"] for e in by_messages if "TEXT" in e["type"]] == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]

    call = {"id": "c1", "name": "lookup", "args": {"q": "x"}}
    graph = StateGraph(MessagesState)
    graph.add_node("plan", lambda s: {"messages": [AIMessage("Looking", tool_calls=[call])]})
    graph.add_node("tool", lambda s: {"messages": ToolMessage("42", id="r1", tool_call_id="c1")})
    graph.add_node("quiet", lambda s: None)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "tool")
    graph.add_edge("tool", "quiet")
    graph.add_edge("quiet", END)
    start = [{"messages": [("user", "go")]}]
    by_messages = _mapped(graph, start, "messages")
    assert _mapped(graph, start, "updates") == by_messages
    assert [e["type"] for e in by_messages if "STEP" not in e["type"]] == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START",
        "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]


def test_tasks_of_one_node_at_once_share_its_step():
    """Parallel tool calls: two ``tools`` tasks run at once. One STEP_STARTED "tools",
    finished when the last of them ends (the official client refuses a second
    STEP_STARTED of a step still active)."""
    mapper = EventMapper("m-1")
    events = mapper.on_task({"id": "t1", "name": "tools"})
    events += mapper.on_task({"id": "t2", "name": "tools"})
    assert kinds(events) == ["STEP_STARTED"]
    assert mapper.on_task({"id": "t1", "name": "tools", "interrupts": [{}]}) == []
    done = mapper.on_task({"id": "t2", "name": "tools", "result": {}})
    assert [(e.type.value, e.step_name) for e in done] == [("STEP_FINISHED", "tools")]
    # Open again in the next superstep; close_all finishes it once.
    mapper.on_task({"id": "t3", "name": "tools"})
    mapper.on_task({"id": "t4", "name": "tools"})
    assert [(e.type.value, e.step_name) for e in mapper.close_all()] == [
        ("STEP_FINISHED", "tools")]
