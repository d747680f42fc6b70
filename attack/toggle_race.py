"""Attack: the same toggle (same request_id) sent at once on several connections of one user,
many rounds. Every answer of one request_id must be the same, and the place's state must be
what that answer says (one toggle applied, not two)."""
import random, threading
import tb

main = tb.user("tog%d" % random.randint(0, 10**6))
conns = [tb.Conn() for _ in range(6)]
for c in conns: c.ok("auth.resume", {"token": main.token})
bad = 0
for rnd in range(40):
    rid = "tap-%d" % rnd
    place = 1 + rnd % 5
    answers = [None] * len(conns)
    barrier = threading.Barrier(len(conns))
    def go(k):
        barrier.wait()
        answers[k] = conns[k].call("favorites.toggle", {"place_id": place, "request_id": rid})
    ts = [threading.Thread(target=go, args=(k,)) for k in range(len(conns))]
    for t in ts: t.start()
    for t in ts: t.join(15)
    results = [a.get("result") or a.get("error") for a in answers]
    saved = {r.get("saved") for r in results if "saved" in r}
    errors = [r for r in results if "saved" not in r]
    now = main.ok("favorites.contains", {"place_ids": [place]})["saved"]
    actual = any("favorites" in s["lists"] for s in now)
    if len(saved) != 1 or errors or actual not in saved:
        bad += 1
        print("round", rnd, "answers", results, "state saved:", actual)
print("rounds with disagreement:", bad)
