"""The MCP surface (`dialectic mcp`, docs/mcp.md): Dialectic as a tool for AI assistants, on the
official Model Context Protocol SDK (the `mcp` extra, imported only by this package, which only
the `dialectic mcp` command loads).

    server.py      the MCPServer: tools, the result and transcript resources, the prompt
    http.py        /mcp on `serve`: streamable HTTP through the SDK's session manager
    tools.py       estimate, start, get, list and wait for debates: one service call each
    evaluate.py    an evaluation on a small labelled set, its cost asked first
    views.py       the tools' typed answers, filled by the service's presentation functions
    transcript.py  a debate's transcript as text
"""
