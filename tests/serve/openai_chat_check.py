"""The `openai` Python client's chat API against a running `meshlm serve` of a byte-level model
(the default ChatML template): chat completions, streamed deltas, logprobs, seeds, and 400s for
malformed messages. Usage: openai_chat_check.py BASE_URL API_KEY (BASE_URL ends in /v1).
Prints one line per check and exits non-zero on the first failure."""
import sys

import openai

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, timeout=60, max_retries=0)
model = client.models.list().data[0].id
checks = 0


def check(name, cond, detail=""):
    global checks
    if not cond:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    checks += 1
    print(f"ok   {name}")


msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Doc 3?"}]
prompt = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nDoc 3?<|im_end|>\n"
          "<|im_start|>assistant\n")
r = client.chat.completions.create(model=model, messages=msgs, max_tokens=8, temperature=0)
c = r.choices[0]
check("chat", r.object == "chat.completion" and c.message.role == "assistant" and
      isinstance(c.message.content, str) and c.finish_reason in ("stop", "length"), r)
check("chat prompt is the template", r.usage.prompt_tokens == len(prompt.encode()), r.usage)

pieces, finish, roles = [], None, []
for chunk in client.chat.completions.create(model=model, messages=msgs, max_tokens=8,
                                            temperature=0, stream=True):
    check("chunk object", chunk.object == "chat.completion.chunk", chunk)
    for ch in chunk.choices:
        pieces.append(ch.delta.content or "")
        roles.append(ch.delta.role)
        finish = ch.finish_reason or finish
check("stream deltas", "".join(pieces) == c.message.content and finish == c.finish_reason and
      roles[0] == "assistant", (pieces, c.message.content))

r = client.chat.completions.create(model=model, messages=msgs, max_tokens=6, temperature=1.0,
                                   n=2, seed=7, logprobs=True, top_logprobs=2)
again = client.chat.completions.create(model=model, messages=msgs, max_tokens=6, temperature=1.0,
                                       n=2, seed=7)
check("n and seed", len(r.choices) == 2 and
      [x.message.content for x in r.choices] == [x.message.content for x in again.choices], r)
lp = r.choices[0].logprobs.content
check("logprobs", 1 <= len(lp) <= 6, lp)
check("top_logprobs", all(t.logprob <= 0 and 1 <= len(t.top_logprobs) <= 2 for t in lp), lp)
entries = lp + [x for t in lp for x in t.top_logprobs]
check("logprob bytes", all(t.bytes is not None and t.bytes and all(0 <= b <= 255 for b in t.bytes)
                           for t in entries), lp)

for name, bad, param in [("no messages", [], "messages"),
                         ("bad role", [{"role": "wizard", "content": "x"}], "messages"),
                         ("bad content", [{"role": "user", "content": 3}], "messages")]:
    try:
        client.chat.completions.create(model=model, messages=bad, max_tokens=2)
        check(name, False, "no error")
    except openai.BadRequestError as e:
        check(name, e.status_code == 400 and e.body.get("param") == param, e.body)

print(f"{checks} passed, 0 failed")
