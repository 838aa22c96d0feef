"""The LangGraph Platform API ("Agent Protocol") as a door onto the same engine: the
clients of the LangGraph world (``langgraph-sdk``, ``useStream``, Agent Inbox,
``RemoteGraph``) on our runs, interrupts, policies and audit. See docs/langgraph-api.md."""
