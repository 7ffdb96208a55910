"""The custom agent command the model gateway's end-to-end tests run, on every backend (a
container with no network reaches the gateway only through its run's socket; a Pod through
the API server's port-forward): one script, so each backend is asked the same thing."""

#: ``python3 -c GATEWAY_AGENT N [fix]``: N requests to the model through the gateway, at
#: once; exit 1 if one was refused. With "fix" it first fixes the toggle task and calls
#: test_patch (ssebench's fastmcp), whose text is what it asks the model; else stdlib only.
GATEWAY_AGENT = """\
import asyncio, json, os, sys, threading, urllib.error, urllib.request
url, key, n = os.environ["OPENAI_BASE_URL"] + "/chat/completions", os.environ["OPENAI_API_KEY"], int(sys.argv[1])
text = "fix it"
if sys.argv[2:] == ["fix"]:
    from fastmcp import Client
    open("state.txt", "w").write("fixed\\n")
    async def call():
        async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
            return (await client.call_tool("test_patch", {})).content[0].text
    text = asyncio.run(call())
body = json.dumps({"model": "scripted-model", "messages": [{"role": "user", "content": text}]}).encode()
start, refused = threading.Barrier(n), []
def ask():
    start.wait()
    request = urllib.request.Request(url, body, {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=120).read()
    except urllib.error.HTTPError as error:
        refused.append(json.loads(error.read())["error"]["message"])
threads = [threading.Thread(target=ask) for _ in range(n)]
[t.start() for t in threads]
[t.join() for t in threads]
print(*refused[:1], file=sys.stderr)
sys.exit(1 if refused else 0)
"""
