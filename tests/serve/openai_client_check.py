"""The `openai` Python client against a running `meshlm serve`: models, completions, streaming,
logprobs with echo, errors. Usage: openai_client_check.py BASE_URL API_KEY (BASE_URL ends in /v1).
Prints one line per check and exits non-zero on the first failure."""
import sys

import openai

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, timeout=60, max_retries=0)
checks = 0


def check(name, cond, detail=""):
    global checks
    if not cond:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    checks += 1
    print(f"ok   {name}")


models = client.models.list()
model = models.data[0].id
check("models.list", len(models.data) == 1 and model, models)

r = client.completions.create(model=model, prompt="Document 3:", max_tokens=12, temperature=0)
text = r.choices[0].text
check("completion", isinstance(text, str) and r.choices[0].finish_reason in ("stop", "length"), r)
check("usage", r.usage.prompt_tokens == len("Document 3:") and
      r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, r.usage)

pieces, finish = [], None
for chunk in client.completions.create(model=model, prompt="Document 3:", max_tokens=12,
                                       temperature=0, stream=True):
    for c in chunk.choices:
        pieces.append(c.text)
        finish = c.finish_reason or finish
check("stream", "".join(pieces) == text and finish == r.choices[0].finish_reason,
      (pieces, text))

r = client.completions.create(model=model, prompt="Document 3:", max_tokens=4, temperature=0,
                              logprobs=2, echo=True)
lp = r.choices[0].logprobs
n_prompt = len("Document 3:")
check("echo text", r.choices[0].text.startswith("Document 3:"), r.choices[0].text)
check("echo logprobs", lp.token_logprobs[0] is None and lp.top_logprobs[0] is None and
      len(lp.tokens) == n_prompt + r.usage.completion_tokens and
      all(x <= 0 for x in lp.token_logprobs[1:]), lp)
check("top_logprobs", all(1 <= len(t) <= 2 for t in lp.top_logprobs[1:]) and
      all(lp.token_logprobs[i] == max(lp.top_logprobs[i].values())
          for i in range(n_prompt, len(lp.tokens))), lp.top_logprobs)
check("text_offset", lp.text_offset[:3] == [0, 1, 2], lp.text_offset)

r = client.completions.create(model=model, prompt=[[68, 111, 99], [68, 111]], max_tokens=3,
                              temperature=0.8, seed=5, n=2)
check("token prompts x n", [c.index for c in r.choices] == [0, 1, 2, 3], r.choices)
again = client.completions.create(model=model, prompt=[[68, 111, 99], [68, 111]], max_tokens=3,
                                  temperature=0.8, seed=5, n=2)
check("seeded", [c.text for c in r.choices] == [c.text for c in again.choices])

try:
    client.completions.create(model=model, prompt="x", max_tokens=10 ** 6)
    check("400", False, "no error")
except openai.BadRequestError as e:
    check("400", e.status_code == 400 and e.body.get("param") == "max_tokens", e.body)

bad = openai.OpenAI(base_url=base, api_key="wrong", max_retries=0)
try:
    bad.completions.create(model=model, prompt="x", max_tokens=1)
    check("401", False, "no error")
except openai.AuthenticationError as e:
    check("401", e.status_code == 401, e)

print(f"{checks} passed, 0 failed")
