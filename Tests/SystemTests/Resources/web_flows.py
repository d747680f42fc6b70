"""The traveller's web app in a real browser: Playwright (PyPI) driving Debian's chromium.

Run by WebAppTests with the interpreter of .build/pyenv (deploy/local/test makes it):

    python web_flows.py '{"base":"http://127.0.0.1:PORT","flow":"welcome","screens":".build/screens",
                          "tiles":"http://127.0.0.1:9","admin":"<token>"}'

Runs one flow at a phone's width (375 px) and a desktop's (1280 px), saves a screenshot of
each under `screens` (FLOW-375.png, FLOW-1280.png), and prints one JSON object:

    {"flow": "welcome", "problems": [], "measures": {...}}

`base` may be https (through a TLS proxy whose self-signed certificate is not checked).

A problem is a check that failed, a console error, or a request that failed or was answered
4xx/5xx, except the map's background tiles (`tiles`, which cannot load here). Every wait is
bounded; the script exits 0 whatever the app did, and the test asserts on the summary.
"""

import json
import ssl
import sys
import time
import traceback
import urllib.request

from playwright.sync_api import sync_playwright

plan = json.loads(sys.argv[1])
base = plan["base"]
flow = plan["flow"]
problems = []
measures = {}
WAIT = 10_000
TLS = ssl._create_unverified_context() if base.startswith("https:") else None
# Names unique to this run, so a run against a suite that already saw one starts afresh.
RUN = "%05d" % (int(time.time() * 1000) % 100_000)


def rpc(method, params=None, token=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(base + "/rpc", data=body, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=10, context=TLS) as response:
        return json.loads(response.read())


def user(name):
    """Registers `name` (with this run's suffix) and signs in: its token."""
    name = name + RUN
    password = "Pass-%s-1" % name
    rpc("auth.register", {"username": name, "email": name + "@example.org", "name": name.title(), "password": password})
    return rpc("auth.login", {"username": name, "password": password})["result"]["token"]


def until(page, expression):
    """Waits (at most WAIT ms) until `expression` holds in the page. (Playwright's own
    wait_for_function compiles its predicate with eval, which the app's CSP refuses.)"""
    for _ in range(WAIT // 100):
        if page.evaluate(expression):
            return
        page.wait_for_timeout(100)
    raise TimeoutError("waited for " + expression)


def check(condition, what):
    if not condition:
        problems.append(what)
    return condition


def watch(page, width):
    """Records console errors and failed requests other than the background tiles."""
    tiles = plan["tiles"]

    def on_console(message):
        # A resource that did not load is told by on_failed or on_response, with its URL.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            problems.append("%d px console: %s" % (width, message.text))

    def on_failed(request):
        if not request.url.startswith(tiles):
            problems.append("%d px request failed: %s %s" % (width, request.url, request.failure))

    def on_response(response):
        if response.status >= 400 and not response.url.startswith(tiles):
            problems.append("%d px %d for %s" % (width, response.status, response.url))

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append("%d px page error: %s" % (width, error)))
    page.on("requestfailed", on_failed)
    page.on("response", on_response)


def open_app(browser, width, route="#/", token=None, remember=False, where=None):
    """A fresh context (a cold cache) at `width`, signed in with `token`, at `where` (the
    browser's position, given to the page) if given; the page at `route`, ready."""
    position = {"geolocation": {"latitude": where["lat"], "longitude": where["lon"]}, "permissions": ["geolocation"]} if where else {}
    context = browser.new_context(viewport={"width": width, "height": 800 if width < 700 else 900}, ignore_https_errors=TLS is not None, **position)
    if token:
        storage = "localStorage" if remember else "sessionStorage"
        context.add_init_script("window.%s.setItem('tourbus.token', %s)" % (storage, json.dumps(token)))
    page = context.new_page()
    watch(page, width)
    started = time.monotonic()
    page.goto(base + "/" + route)
    page.wait_for_selector("body[data-ready=true]", timeout=WAIT)
    return context, page, started


def shot(page, width, part=None):
    """A screenshot of the viewport, named by the flow (and `part`, a second view of it) and width."""
    page.wait_for_timeout(300)
    name = plan.get("shots", flow) + ("-" + part if part else "")
    page.screenshot(path="%s/%s-%d.png" % (plan["screens"], name, width), full_page=False)


# MARK: The flows, each run at both widths.


def welcome(browser, width):
    context, page, started = open_app(browser, width)
    page.wait_for_selector(".leaflet-marker-icon", timeout=WAIT)
    measures["first_markers_ms_%d" % width] = round((time.monotonic() - started) * 1000)
    places = page.locator(".places li")
    check(places.count() >= 5, "%d px: %d popular places listed" % (width, places.count()))
    check(page.locator(".leaflet-marker-icon").count() >= 5, "%d px: markers on the map" % width)
    check(page.locator("h1").first.inner_text() == "Popular now", "%d px: the title is the strings table's" % width)
    shot(page, width)
    context.close()


def browse(browser, width):
    context, page, _ = open_app(browser, width, "#/browse")
    page.wait_for_selector(".chips button", timeout=WAIT)
    museums = page.get_by_role("button", name="Museums and galleries")
    museums.click()
    page.wait_for_selector(".chips button[aria-pressed=true]:has-text('Museums')", timeout=WAIT)
    page.wait_for_selector(".places li", timeout=WAIT)
    metas = page.locator(".places li .meta").all_inner_texts()
    check(metas and all(m.startswith("Museums and galleries") for m in metas), "%d px: only museums listed: %s" % (width, metas[:3]))
    page.get_by_label("Free").check()
    page.wait_for_selector(".filters input:checked", timeout=WAIT)
    page.wait_for_selector(".places li, .empty", timeout=WAIT)
    metas = page.locator(".places li .meta").all_inner_texts()
    check(all("Free" in m for m in metas), "%d px: only free museums: %s" % (width, metas[:3]))
    page.get_by_role("button", name="Search this area").click()
    until(page, "location.hash.includes('area=')")
    page.wait_for_selector(".places li, .empty", timeout=WAIT)
    shot(page, width)
    context.close()


def search(browser, width):
    token = user("searcher%d" % width)
    context, page, _ = open_app(browser, width, token=token)
    box = page.locator("#q")
    box.fill("opera")
    page.wait_for_selector("#suggestions [role=option]", timeout=WAIT)
    suggestions = page.locator("#suggestions [role=option]").all_inner_texts()
    check(any("Opera" in s for s in suggestions), "%d px: suggestions for 'opera': %s" % (width, suggestions))
    shot(page, width)
    box.press("ArrowDown")
    box.press("Enter")
    until(page, "location.hash.startsWith('#/place/')")
    # The place's own heading, not the one of the page it replaces (a busy machine shows that
    # one a moment longer).
    try:
        page.wait_for_selector("h1:has-text('Opera')", timeout=WAIT)
    except Exception:
        pass
    check("Opera" in page.locator("h1").inner_text(), "%d px: picked a suggestion" % width)
    box.fill("harbour bridge")
    box.press("Enter")
    until(page, "location.hash.startsWith('#/search')")
    page.wait_for_selector(".places li", timeout=WAIT)
    check(any("Harbour Bridge" in n for n in page.locator(".places .name").all_inner_texts()), "%d px: text search" % width)
    # The signed-in user's recent searches, once favorites has heard of them.
    found = False
    for _ in range(20):
        box.fill("")
        box.blur()
        box.focus()
        try:
            page.wait_for_selector("#suggestions li.heading", timeout=500)
            found = any("harbour bridge" in s for s in page.locator("#suggestions [role=option]").all_inner_texts())
        except Exception:  # noqa: BLE001 - not there yet
            found = False
        if found:
            break
        page.wait_for_timeout(250)
    check(found, "%d px: recent searches offered" % width)
    context.close()


def place(browser, width):
    token = user("reviewer%d" % width)
    context, page, _ = open_app(browser, width, "#/place/1", token=token)
    page.wait_for_selector(".facts", timeout=WAIT)
    check(page.locator("h1").inner_text().startswith("Sydney Opera House"), "%d px: the place's name" % width)
    facts = page.locator(".facts").inner_text()
    check("Bennelong Point" in facts and "+61" in facts, "%d px: address and phone: %s" % (width, facts))
    # The hosted photo (the demo's drawing), its small size loaded, labelled as a drawing.
    page.wait_for_selector(".photos figure.hosted img", timeout=WAIT)
    until(page, "document.querySelector('.photos figure.hosted img').complete")
    size = page.evaluate("[document.querySelector('.photos figure.hosted img').naturalWidth, document.querySelector('.photos figure.hosted img').naturalHeight]")
    check(size == [320, 210], "%d px: the hosted photo's small size loaded: %s" % (width, size))
    check("drawing" in page.locator(".photos figure.hosted figcaption").inner_text(), "%d px: the drawing is labelled as one" % width)
    check(page.locator(".photos figure.hosted a").get_attribute("href") == "/places/1/photos/1/1280.jpg", "%d px: it opens the large size" % width)
    page.locator(".photos").scroll_into_view_if_needed()
    shot(page, width, "photo")
    page.wait_for_selector(".directions a", timeout=WAIT)
    check(page.locator(".directions a[href^='https://www.google.com/maps/dir/']").count() >= 1, "%d px: directions deep links" % width)
    page.get_by_label("Your rating").select_option("2")
    page.locator("#review-text").fill("Loud, but worth it (%d)" % width)
    page.get_by_role("button", name="Post").click()
    page.wait_for_selector(".review", timeout=WAIT)
    check(any("Loud, but worth it" in r for r in page.locator(".review").all_inner_texts()), "%d px: the review added" % width)
    # Another user's higher rating, then sorted by rating, both ways.
    other = user("critic%d" % width)
    rpc("reviews.add", {"place_id": 1, "rating": 5, "text": "Superb (%d)" % width}, token=other)
    page.get_by_label("Sort reviews").first.select_option("rating")
    page.wait_for_timeout(400)
    first = page.locator(".review").first.inner_text()
    check("Superb" in first, "%d px: highest rating first: %s" % (width, first))
    page.locator(".sort select").nth(1).select_option("asc")
    page.wait_for_timeout(400)
    check("Loud" in page.locator(".review").first.inner_text(), "%d px: ascending puts the lowest first" % width)
    shot(page, width)
    # Opening hours, where the demo has them: the State Library (demo place 54), late Monday to Thursday.
    page.evaluate("location.hash = '#/place/54'")
    page.wait_for_selector("h1:has-text('State Library')", timeout=WAIT)
    page.wait_for_selector(".hours li", timeout=WAIT)
    hours = page.locator(".hours li").all_inner_texts()
    check(len(hours) == 7 and hours[0] == "Monday 09:00–20:00" and hours[6] == "Sunday 10:00–17:00", "%d px: the library's hours: %s" % (width, hours))
    page.locator(".hours").scroll_into_view_if_needed()
    shot(page, width, "hours")
    context.close()


def favorites(browser, width):
    token = user("saver%d" % width)
    context, page, _ = open_app(browser, width, "#/favorites", token=token)
    page.wait_for_selector(".empty", timeout=WAIT)
    check(page.locator(".empty").first.inner_text() == "No favorites", "%d px: the empty list says so" % width)
    page.goto(base + "/#/")
    page.wait_for_selector(".places li .heart", timeout=WAIT)
    name = page.locator(".places li .name").first.inner_text()
    page.locator(".places li .heart").first.click()
    page.wait_for_selector("#notice:not([hidden])", timeout=WAIT)
    page.goto(base + "/#/favorites")
    page.wait_for_selector(".places li", timeout=WAIT)
    check(page.locator(".places .name").all_inner_texts() == [name], "%d px: the saved place is listed" % width)
    shot(page, width)
    # From its page, unsaved again.
    page.locator(".places .name").first.click()
    page.wait_for_selector("h1 .heart[aria-pressed=true]", timeout=WAIT)
    page.locator("h1 .heart").click()
    page.wait_for_selector("h1 .heart[aria-pressed=false]", timeout=WAIT)
    page.goto(base + "/#/favorites")
    page.wait_for_selector(".empty", timeout=WAIT)
    context.close()


def account(browser, width):
    context, page, _ = open_app(browser, width, "#/account")
    page.wait_for_selector("#register", timeout=WAIT)
    password = page.locator("#register-password")
    password.fill("short")
    check(page.locator(".rules .missing").count() == 3, "%d px: 'short' misses three rules" % width)
    password.fill("Longer-Pass-1")
    check(page.locator(".rules .missing").count() == 0, "%d px: a good password keeps every rule" % width)
    name = "newcomer%d%s" % (width, RUN)
    page.locator("#register-username").fill(name)
    page.locator("#register-email").fill(name + "@example.org")
    page.locator("#register-name").fill("New Comer")
    shot(page, width)
    page.get_by_role("button", name="Create account").click()
    until(page, "document.getElementById('nav-account').textContent === 'Profile'")
    check(page.evaluate("sessionStorage.getItem('tourbus.token') !== null && localStorage.getItem('tourbus.token') === null"),
          "%d px: the token is kept for the tab only" % width)
    page.goto(base + "/#/account")
    page.locator("#logout").click()
    until(page, "document.getElementById('nav-account').textContent === 'Log in'")
    page.goto(base + "/#/account")
    page.locator("#login-username").fill(name)
    page.locator("#login-password").fill("Wrong-Pass-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#login .error:has-text('Wrong username or password')", timeout=WAIT)
    page.locator("#login-password").fill("Longer-Pass-1")
    page.locator("#login input[name=remember]").check()
    page.get_by_role("button", name="Log in").click()
    until(page, "document.getElementById('nav-account').textContent === 'Profile'")
    check(page.evaluate("localStorage.getItem('tourbus.token') !== null"), "%d px: remembered in localStorage" % width)
    # Another language, from the header.
    page.get_by_label("Language").select_option("de")
    until(page, "document.getElementById('nav-favorites').textContent !== 'Favorites'")
    german = page.locator("#nav-favorites").inner_text()
    page.get_by_label(page.locator("#lang-label").inner_text()).select_option("ru")
    until(page, "document.getElementById('nav-favorites').textContent !== %s" % json.dumps(german))
    check(page.evaluate("document.documentElement.lang") == "ru", "%d px: the page says it is Russian" % width)
    page.get_by_label(page.locator("#lang-label").inner_text()).select_option("en")
    context.close()


def keyboard(browser, width):
    """Every control has a name, and the search and a place are reached from the keyboard."""
    context, page, _ = open_app(browser, width)
    page.wait_for_selector(".places li", timeout=WAIT)
    unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
        .filter(e => e.offsetParent !== null)
        .filter(e => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim() || e.getAttribute('title') || e.getAttribute('alt')))
        .map(e => e.outerHTML.slice(0, 80))""")
    check(not unnamed, "%d px: controls without a name: %s" % (width, unnamed))
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    check(page.evaluate("document.activeElement.id") == "q", "%d px: Tab reaches the search box second" % width)
    page.keyboard.type("bondi")
    # The options for the whole word: those for "bon", answered late under load, would be
    # replaced (and the choice with them) between the arrow and Enter.
    until(page, "document.getElementById('suggestions').dataset.prefix === 'bondi'"
                " && document.querySelector('#suggestions [role=option]') !== null")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    until(page, "location.hash.startsWith('#/place/')")
    shot(page, width)
    context.close()


def text_only(browser, width):
    """User text is only ever text: markup in reviews and names runs nothing."""
    attack = user("mallory%d" % width)
    rpc("profile.update", {"name": "<img src=x onerror=\"window.__pwned=1\">"}, token=attack)
    for text in ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=1</script>", '"><svg onload="window.__pwned=1">']:
        reply = rpc("reviews.add", {"place_id": 2, "rating": 3, "text": text}, token=attack)
        check("result" in reply, "the review was taken: %s" % reply)
    context, page, _ = open_app(browser, width, "#/place/2")
    page.wait_for_selector(".review", timeout=WAIT)
    page.wait_for_timeout(500)
    check(page.evaluate("window.__pwned") is None, "%d px: markup ran" % width)
    texts = page.locator(".review").all_inner_texts()
    check(any('<svg onload="window.__pwned=1">' in t for t in texts), "%d px: the markup shows as text: %s" % (width, texts[:1]))
    check(any("<img src=x onerror" in t for t in texts), "%d px: the name shows as text" % width)
    check(page.locator(".review img, .review svg, .review script").count() == 0, "%d px: no element was made of it" % width)
    shot(page, width)
    context.close()


def alerts(browser, width):
    """Nearby annotations, the form with dependent choices, a report posted, an alert in the
    answer to the page's position, and one pushed live over the WebSocket."""
    here = {"lat": -33.8570, "lon": 151.2150}
    # Each width's live alert at a spot of its own, far from the other's (alerts near one another are judged together).
    bondi = {"lat": -33.8915 if width < 700 else -33.8400, "lon": 151.2767}
    walker = user("walker%d" % width)
    reporter = user("reporter%d" % width)
    rpc("annotations.submit", dict(here, values={"kind": "hazard", "detail": "flooding", "severity": "minor"}, text="Water over the path %d" % width), token=reporter)
    context, page, _ = open_app(browser, width, "#/alerts", token=walker, where=here)
    page.wait_for_selector(".annotation", timeout=WAIT)
    check(any("Water over the path %d" % width in a for a in page.locator(".annotation").all_inner_texts()), "%d px: the nearby annotation" % width)
    check(page.locator(".leaflet-marker-icon").count() >= 1, "%d px: annotations on the map" % width)
    # The answer to the page's own position report holds the alert.
    page.wait_for_selector("#live-alerts .alert", timeout=WAIT)
    # Dependent choices: the details offered follow the kind.
    kind = page.locator("#annotation-kind")
    kind.select_option("transit")
    transit = page.locator("#annotation-detail option").all_inner_texts()
    kind.select_option("hazard")
    hazard = page.locator("#annotation-detail option").all_inner_texts()
    check("Flooding" in hazard and "Flooding" not in transit and transit != hazard, "%d px: details follow the kind: %s / %s" % (width, transit, hazard))
    check(not page.locator("#annotation-line").is_visible(), "%d px: a hazard asks for no transport line" % width)
    page.locator("#annotation-detail").select_option("flooding")
    page.locator("#annotation-severity").select_option("minor")
    page.locator("#annotation-text").fill("Puddle by the steps %d" % width)
    page.get_by_role("button", name="Post").click()
    page.wait_for_selector(".annotation:has-text('Puddle by the steps %d')" % width, timeout=WAIT)
    # The walker's phone reports from Bondi, where something was just posted: this page hears it live.
    rpc("annotations.submit", dict(bondi, values={"kind": "hazard", "detail": "flooding", "severity": "minor"}, text="Rip current %d" % width), token=reporter)
    time.sleep(1.1)  # reports are judged at most once a second
    reply = rpc("notify.location", bondi, token=walker)
    check(len(reply.get("result", {}).get("alerts", [])) == 1, "%d px: the phone's report alerted: %s" % (width, reply))
    page.wait_for_selector("#live-alerts .alert:has-text('Rip current %d')" % width, timeout=WAIT)
    shot(page, width)
    context.close()


def group(browser, width):
    """A group made in the app: a friend invited and on its live map, chat both ways, live."""
    friend_name = "friend%d%s" % (width, RUN)
    friend = user("friend%d" % width)
    owner = user("owner%d" % width)
    context, page, _ = open_app(browser, width, "#/groups", token=owner)
    page.wait_for_selector("#group-name", timeout=WAIT)
    page.locator("#group-name").fill("Harbour walk %d" % width)
    page.locator(".group-form button").click()
    until(page, "location.hash.startsWith('#/group/')")
    group_id = int(page.evaluate("location.hash.split('/')[2]"))
    page.wait_for_selector(".chat-form", timeout=WAIT)
    # The friend joins, shares where they are, and writes; the page hears both live.
    check("result" in rpc("groups.invite", {"group_id": group_id, "username": friend_name}, token=owner), "%d px: invited" % width)
    check("result" in rpc("groups.accept", {"group_id": group_id}, token=friend), "%d px: accepted" % width)
    rpc("groups.sharing", {"group_id": group_id, "on": True}, token=friend)
    rpc("groups.position", {"lat": -33.8610, "lon": 151.2100, "heading_deg": 90}, token=friend)
    page.wait_for_selector(".leaflet-marker-icon", timeout=WAIT)
    page.wait_for_selector(".members li:has-text('Friend%d')" % width, timeout=WAIT)
    rpc("chat.send", {"to": "group:%d" % group_id, "text": "<b>Meet</b> at the steps", "client_msg_id": "f-%d" % width}, token=friend)
    page.wait_for_selector(".message:has-text('<b>Meet</b> at the steps')", timeout=WAIT)
    check(page.locator(".message b").count() == 0, "%d px: a message is text" % width)
    page.locator("#chat-text").fill("On my way")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector(".message:has-text('On my way')", timeout=WAIT)
    history = rpc("chat.history", {"conversation": "group:%d" % group_id, "limit": 10}, token=friend)
    check(any(m["text"] == "On my way" for m in history["result"]["messages"]), "%d px: the friend reads it" % width)
    page.get_by_label("Share my position with the group").check()
    page.wait_for_timeout(300)
    shown = rpc("groups.map", {"group_id": group_id}, token=friend)["result"]["positions"]
    check(len(shown) == 2, "%d px: both on the map once the page shares: %s" % (width, shown))
    shot(page, width)
    context.close()


def tour(browser, width):
    """Tour 1 (the test made it, with a map of its own): its stops, a walk with the browser's
    position simulated, the heading from successive fixes, the next stop, the tour's own map."""
    walker = user("tourist%d" % width)
    start = {"latitude": -33.8590, "longitude": 151.2145}
    context, page, _ = open_app(browser, width, "#/tour/1", token=walker, where={"lat": start["latitude"], "lon": start["longitude"]})
    page.wait_for_selector(".stops li", timeout=WAIT)
    check(page.locator(".stops li").count() == 3, "%d px: three stops" % width)
    check(page.locator(".leaflet-marker-icon").count() >= 3, "%d px: the stops on the map" % width)
    page.locator("#start-tour").click()
    page.wait_for_selector("#walk .next", timeout=WAIT)
    check(" to " in page.locator("#walk .next").inner_text(), "%d px: how far to the next stop: %s" % (width, page.locator("#walk .next").inner_text()))
    # A step south: no heading from the device, so it comes from the two fixes.
    context.set_geolocation({"latitude": start["latitude"] - 0.0008, "longitude": start["longitude"]})
    page.wait_for_selector("#walk .heading", timeout=WAIT)
    heading = page.locator("#walk .heading").inner_text()
    check("180" in heading, "%d px: heading south from successive fixes: %s" % (width, heading))
    page.locator("#show-tour-map").click()
    page.wait_for_selector("#tour-map img.leaflet-tile-loaded", timeout=WAIT)
    sources = page.locator("#tour-map img.leaflet-tile").evaluate_all("tiles => tiles.map(t => t.getAttribute('src'))")
    check(all(src.startswith("/tours/1/map/") for src in sources), "%d px: the tour map's own tiles: %s" % (width, sources[:3]))
    context.set_geolocation({"latitude": start["latitude"] - 0.0012, "longitude": start["longitude"] + 0.0002})
    page.wait_for_selector("#tour-map path.leaflet-interactive", timeout=WAIT)
    shot(page, width)
    context.close()


flows = {f.__name__: f for f in [welcome, browse, search, place, favorites, account, keyboard, text_only, alerts, group, tour]}

try:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=plan.get("chromium", "/usr/bin/chromium"), args=["--no-sandbox"])
        try:
            for width in (375, 1280):
                try:
                    flows[flow](browser, width)
                except Exception as error:  # noqa: BLE001 - the summary says what failed
                    line = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == __file__][-1]
                    first = str(error).splitlines()[0] if str(error) else ""
                    problems.append("%d px, web_flows.py line %d: %s: %s" % (width, line, type(error).__name__, first))
        finally:
            browser.close()
except Exception as error:  # noqa: BLE001
    problems.append("the browser: %s: %s" % (type(error).__name__, error))
print(json.dumps({"flow": flow, "problems": problems, "measures": measures}))
