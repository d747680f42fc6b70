// The page's building blocks. Text from users (reviews, names, chat) is only ever set as
// text: `h` makes text nodes of strings and has no way to write HTML.

import { call } from "./rpc.js";

/// An element: `h("a", {href: "#/"}, "Home")`. Attributes starting with `on` are listeners;
/// `class`, `for` and the rest are attributes; children are nodes or strings (as text).
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "value") element.value = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/// Replaces what `element` holds.
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// MARK: Strings

const languages = ["en", "en-AU", "ru", "de"];
let strings = {};
let language = "en";

/// The language the app speaks: the user's choice, else the browser's if the guide has it.
export function chosenLanguage() {
  const kept = localStorage.getItem("tourbus.lang");
  if (kept && languages.includes(kept)) return kept;
  const wanted = navigator.languages ?? [navigator.language];
  for (const tag of wanted) {
    if (languages.includes(tag)) return tag;
    const base = tag.split("-")[0];
    if (languages.includes(base)) return base;
  }
  return "en";
}

export async function loadStrings(lang) {
  const table = await call("strings.get", { lang });
  strings = table.strings;
  language = lang;
  document.documentElement.lang = table.lang ?? lang;
}

export const currentLanguage = () => language;
export const supportedLanguages = languages;

/// The interface string `key`, `{name}` filled from `values`.
export function t(key, values = {}) {
  const text = strings[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

// MARK: Formats

export function distance(meters) {
  if (meters === undefined || meters === null) return "";
  return meters < 1000 ? t("list.distance_m", { distance: Math.round(meters) }) : t("list.distance_km", { distance: (meters / 1000).toFixed(1) });
}

export function price(level) {
  if (level === undefined || level === null) return "";
  return level === 0 ? t("filter.price_free") : "$".repeat(level);
}

export function stars(rating) {
  if (!rating) return "";
  const full = Math.round(rating);
  return "★".repeat(full) + "☆".repeat(5 - full);
}

/// A short-lived message at the foot of the page, read out by screen readers.
export function notice(text) {
  const box = document.getElementById("notice");
  fill(box, text);
  box.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => (box.hidden = true), 4000);
}

/// The message for an error from a call, in the interface's words where there are some.
export function errorText(error) {
  switch (error?.code) {
    case "unavailable":
    case "deadline_exceeded":
      return t("error.unavailable");
    case "rate_limited":
      return t("account.too_many_attempts");
    case "unauthenticated":
      return error.message.includes("expired") ? t("error.session_expired") : error.message;
    default:
      return error?.message ?? t("error.generic");
  }
}
