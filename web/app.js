// Tourbus in a browser: the shell (header, search with suggestions, language), the router
// (#/, #/browse, #/search, #/place/ID, #/favorites, #/account) and the device's position.

import { Pushes, call, session } from "./rpc.js";
import { PlaceMap, sydney } from "./map.js";
import { chosenLanguage, currentLanguage, fill, h, loadStrings, notice, supportedLanguages, t } from "./ui.js";
import * as views from "./views.js";

let map = null;
let knownPosition = null;

/// Where the user is, if the browser says within 3 s; else Sydney.
async function position() {
  if (knownPosition) return knownPosition;
  if (!navigator.geolocation) return sydney;
  knownPosition = await new Promise((resolve) => {
    navigator.geolocation.getCurrentPosition(
      (fix) => resolve({ lat: fix.coords.latitude, lon: fix.coords.longitude }),
      () => resolve(null),
      { timeout: 3000, maximumAge: 60000 },
    );
  });
  return knownPosition ?? sydney;
}

/// The screen being shown: a screen still loading when another is asked for fills a panel
/// no longer on the page, and its map calls do nothing.
let screen = 0;
let shown = null;

/// The signed-in user's pushes, live over a WebSocket: alerts join the alerts screen's list
/// (elsewhere they show as a notice); a group's positions and messages go to its screen.
let pushes = null;
function listen() {
  pushes?.close();
  pushes = session.token
    ? new Pushes(["notify.alert", "group.position", "chat.message"], (push) => {
        if (push.topic !== "notify.alert") return shown?.onPush?.(push);
        const alerts = push.body?.alerts ?? [];
        if (shown?.onAlerts) shown.onAlerts(alerts);
        else if (alerts.length) notice(t("alerts.title") + ": " + alerts.length);
      })
    : null;
}

function signedInChanged() {
  const link = document.getElementById("nav-account");
  fill(link, session.token ? t("profile.title") : t("button.log_in"));
  if (Boolean(pushes) !== Boolean(session.token) || (pushes && pushes.token !== session.token)) listen();
}

async function route() {
  const ticket = ++screen;
  const current = () => ticket === screen;
  const panel = h("section", { id: "panel", "aria-live": "polite" });
  document.getElementById("panel").replaceWith(panel);
  const context = {
    panel,
    map: {
      show: (places, options) => current() && map.show(places, options),
      showMe: (where) => current() && map.showMe(where),
      bbox: () => map.bbox(),
    },
    get knownPosition() {
      return knownPosition;
    },
    position,
    saved: new Set(),
    route,
    signedInChanged,
    onAlerts: null,
    onPush: null,
  };
  shown = context;
  const [path, rawQuery] = location.hash.replace(/^#/, "").split("?");
  const query = new URLSearchParams(rawQuery ?? "");
  const parts = path.split("/").filter(Boolean);
  // The account screen has nothing to show on a map.
  document.body.dataset.screen = parts[0] ?? "welcome";
  map.resize();
  for (const link of document.querySelectorAll("header nav a")) {
    link.toggleAttribute("aria-current", link.getAttribute("href") === `#/${parts[0] ?? ""}`);
  }
  switch (parts[0]) {
    case undefined:
      return views.welcome(context);
    case "browse":
      return views.browse(context, query);
    case "search":
      return views.search(context, query);
    case "place":
      return views.place(context, Number(parts[1]), query);
    case "favorites":
      return views.favorites(context);
    case "account":
      return views.account(context);
    case "alerts":
      return views.alerts(context);
    case "groups":
      return views.groups(context);
    case "tours":
      return views.tours(context);
    case "tour":
      return views.tour(context, Number(parts[1]));
    case "group":
      return views.group(context, Number(parts[1]));
    default:
      location.hash = "#/";
  }
}

// MARK: The header

function labelHeader() {
  document.title = t("app.name");
  fill(document.querySelector(".brand"), t("app.name"));
  fill(document.getElementById("nav-browse"), t("browse.title"));
  fill(document.getElementById("nav-favorites"), t("favorites.title"));
  fill(document.getElementById("nav-alerts"), t("alerts.title"));
  fill(document.getElementById("nav-groups"), t("groups.title"));
  fill(document.getElementById("nav-tours"), t("tours.title"));
  fill(document.getElementById("lang-label"), t("settings.language"));
  fill(document.getElementById("q-label"), t("nav.search"));
  document.getElementById("q").placeholder = t("search.placeholder");
  signedInChanged();
}

function languages() {
  const select = document.getElementById("lang");
  fill(
    select,
    supportedLanguages.map((tag) => h("option", { value: tag, selected: tag === currentLanguage() }, t(`language.${tag.toLowerCase().replace("-", "_")}`))),
  );
  select.onchange = async () => {
    localStorage.setItem("tourbus.lang", select.value);
    await loadStrings(select.value);
    labelHeader();
    languages();
    route();
  };
}

/// The search box: suggestions as one types (search.autocomplete), the signed-in user's recent
/// searches when it is empty (search.recent); arrows move, Enter picks, Escape closes.
function searchBox() {
  const form = document.getElementById("search");
  const input = document.getElementById("q");
  const list = document.getElementById("suggestions");
  let options = [];
  let active = -1;
  let asked = 0;
  const close = () => {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    active = -1;
  };
  const show = (items, heading, prefix = "") => {
    options = items;
    active = -1;
    // Which text the options answer (a later answer replaces them and what was chosen).
    list.dataset.prefix = prefix;
    fill(
      list,
      heading && items.length ? h("li", { role: "presentation", class: "heading" }, heading) : null,
      items.map((item, i) =>
        h(
          "li",
          { role: "option", id: `suggestion-${i}`, "aria-selected": "false", onmousedown: (event) => (event.preventDefault(), pick(i)) },
          item.text,
        ),
      ),
    );
    list.hidden = items.length === 0;
    input.setAttribute("aria-expanded", items.length ? "true" : "false");
  };
  const pick = (i) => {
    const item = options[i];
    close();
    if (item.id && item.kind === "place") location.hash = `#/place/${item.id}`;
    else {
      input.value = item.text;
      location.hash = `#/search?q=${encodeURIComponent(item.text)}`;
    }
  };
  const suggest = async () => {
    const prefix = input.value.trim();
    const ticket = ++asked;
    try {
      if (!prefix) {
        if (!session.token) return close();
        const recent = await call("search.recent", { limit: 5 });
        if (ticket === asked) show(recent.searches.map((s) => ({ text: s.q ?? s.query ?? s.text })), t("search.recent"));
        return;
      }
      const reply = await call("search.autocomplete", { prefix, near: knownPosition ?? sydney, limit: 6, lang: currentLanguage() });
      if (ticket === asked) show(reply.suggestions, t("search.suggestions"), prefix);
    } catch {
      close();
    }
  };
  let timer;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(suggest, 120);
  });
  input.addEventListener("focus", suggest);
  input.addEventListener("blur", () => setTimeout(close, 100));
  input.addEventListener("keydown", (event) => {
    if (list.hidden) return;
    const items = list.querySelectorAll("[role=option]");
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      active = (active + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      items.forEach((item, i) => item.setAttribute("aria-selected", i === active ? "true" : "false"));
      input.setAttribute("aria-activedescendant", `suggestion-${active}`);
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      pick(active);
    } else if (event.key === "Escape") {
      close();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    close();
    const q = input.value.trim();
    if (q) location.hash = `#/search?q=${encodeURIComponent(q)}`;
  });
}

async function boot() {
  const settings = await (await fetch("/config.json")).json();
  await loadStrings(chosenLanguage());
  labelHeader();
  languages();
  searchBox();
  map = new PlaceMap(document.getElementById("map"), settings.tiles);
  window.addEventListener("hashchange", route);
  window.addEventListener("resize", () => map.resize());
  await route();
  document.body.dataset.ready = "true";
}

boot().catch((error) => {
  fill(document.getElementById("panel"), h("p", { class: "error", role: "alert" }, error.message));
});
