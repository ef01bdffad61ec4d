"""An app's own agent backend, for the agent-answers suite (tests/agents/run.py): pydantic-ai
behind its Vercel AI adapter (the AI SDK UI Message Stream), served by uvicorn.

It trusts only the identity the relay signs (`X-Relay-Identity`, an HS256 JWT: docs/AGENTS.md,
"Your own backend"): a request without a valid one, or whose body does not match the token's
`body_sha256`, is `401`. The agent's model is pydantic-ai's FunctionModel, deterministic and
offline: the first model call streams its thinking and two tool calls (arguments in pieces),
pydantic-ai runs the tools, the second call streams the answer, which names the caller from the
verified identity (`sub`, `tier`).

Run: .venv/agents/bin/python3 tests/agents/backend.py PORT   (BACKEND_IDENTITY_SECRET in the env)
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SECRET = os.environ["BACKEND_IDENTITY_SECRET"].encode()


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verified_identity(token, body):
    """The claims of the relay's identity token (RFC 7519, HS256), or None."""
    try:
        head, payload, sig = token.split(".")
        if json.loads(b64url(head)).get("alg") != "HS256":
            return None
        want = hmac.new(SECRET, f"{head}.{payload}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(want, b64url(sig)):
            return None
        claims = json.loads(b64url(payload))
    except (ValueError, KeyError):
        return None
    if claims.get("iss") != "stream-relay" or claims.get("aud") != "agent-backend" or claims.get("exp", 0) < time.time():
        return None
    if claims.get("body_sha256") != hashlib.sha256(body).hexdigest():
        return None
    return claims


def pieces(text, n=5):
    return [text[i:i + n] for i in range(0, len(text), n)]


async def model_stream(messages, info: AgentInfo):
    returned = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
    if not returned:
        for word in "I should check the governing law and today's date first.".split(" "):
            yield {0: DeltaThinkingPart(content=word + " ")}
        calls = [("call_law", "lookup_governing_law", json.dumps({"country": "SA", "contract_type": "mutual_nda"})),
                 ("call_date", "current_date", json.dumps({"timezone": "Asia/Riyadh"}))]
        for i, (cid, name, args) in enumerate(calls, start=1):
            yield {i: DeltaToolCall(name=name, tool_call_id=cid)}
            for p in pieces(args):
                yield {i: DeltaToolCall(json_args=p)}
        return
    caller = info.instructions or ""
    for word in f"Here is your mutual NDA, drafted {caller}. It is governed by Saudi law.".split(" "):
        yield word + " "


agent = Agent(FunctionModel(stream_function=model_stream))


@agent.tool_plain
def lookup_governing_law(country: str, contract_type: str) -> dict:
    """The law that governs a contract type in a country."""
    return {"law": "Civil Transactions Law", "country": country, "contract_type": contract_type}


@agent.tool_plain
def current_date(timezone: str) -> dict:
    """Today's date (fixed, so the answer is deterministic)."""
    return {"date": "2026-12-07", "timezone": timezone}


async def chat(request: Request):
    body = await request.body()
    claims = verified_identity(request.headers.get("x-relay-identity", ""), body)
    if claims is None:
        return JSONResponse({"error": "no valid X-Relay-Identity"}, status_code=401)
    return await VercelAIAdapter.dispatch_request(request, agent=agent,
                                                  instructions=f"for {claims['sub']} on the {claims['tier']} tier")


app = Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
