/* global L */
// The app's screens, each a function that fills the panel (and the map) from the gateway.

import { call, session } from "./rpc.js";
import { distance, errorText, fill, h, notice, price, stars, t, currentLanguage } from "./ui.js";

/// A list of places as cards linking to their pages; a heart toggles a favorite when signed in.
function placeList(places, context, { empty = t("list.empty") } = {}) {
  if (places.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "ul",
    { class: "places" },
    places.map((place) =>
      h(
        "li",
        { class: "place" },
        h("a", { href: `#/place/${place.id}`, class: "name" }, place.name),
        h(
          "span",
          { class: "meta" },
          [t(`category.${place.category}`), price(place.price_level), stars(place.rating), distance(place.distance_m)].filter(Boolean).join(" · "),
        ),
        place.in_season ? h("span", { class: "badge" }, t("popular.in_season")) : null,
        place.address ? h("span", { class: "address" }, place.address) : null,
        favoriteButton(place, context),
      ),
    ),
  );
}

/// The heart of a place: saved or not, for the signed-in user.
function favoriteButton(place, context) {
  if (!session.token) return null;
  const saved = context.saved?.has(place.id) ?? false;
  const button = h("button", {
    type: "button",
    class: "heart",
    "aria-pressed": saved ? "true" : "false",
    "aria-label": saved ? t("button.remove_favorite") : t("button.add_favorite"),
    title: saved ? t("button.remove_favorite") : t("button.add_favorite"),
    onclick: async () => {
      try {
        const reply = await call("favorites.toggle", { place_id: place.id });
        button.setAttribute("aria-pressed", reply.saved ? "true" : "false");
        const label = reply.saved ? t("button.remove_favorite") : t("button.add_favorite");
        button.setAttribute("aria-label", label);
        button.title = label;
        if (reply.saved) context.saved?.add(place.id);
        else context.saved?.delete(place.id);
        notice(reply.saved ? t("favorites.added") : t("favorites.removed"));
      } catch (error) {
        notice(errorText(error));
      }
    },
  }, saved ? "♥" : "♡");
  return button;
}

/// Which of `places` the signed-in user saved.
async function savedAmong(places) {
  if (!session.token || places.length === 0) return new Set();
  try {
    const reply = await call("favorites.contains", { place_ids: places.map((p) => p.id) });
    // The heart is the built-in "favorites" list.
    return new Set(reply.saved.filter((entry) => entry.lists.includes("favorites")).map((entry) => entry.place_id));
  } catch {
    return new Set();
  }
}

async function showPlaces(context, title, places, extra = []) {
  context.saved = await savedAmong(places);
  fill(context.panel, h("h1", {}, title), ...extra, placeList(places, context));
  context.map.show(places);
}

function failed(context, error) {
  fill(context.panel, h("p", { class: "error", role: "alert" }, errorText(error)), h("button", { type: "button", onclick: () => context.route() }, t("button.retry")));
}

// MARK: Welcome

export async function welcome(context) {
  fill(context.panel, h("h1", {}, t("popular.title")), h("p", {}, t("list.loading")));
  try {
    const near = await context.position();
    const reply = await call("search.popular", { near, radius_m: 20000, limit: 20 });
    context.map.showMe(context.knownPosition);
    await showPlaces(context, t("popular.title"), reply.hits);
  } catch (error) {
    failed(context, error);
  }
}

// MARK: Browse

const radii = [500, 1000, 2000, 5000, 20000];

export async function browse(context, query) {
  const filters = {
    category: query.get("category") ?? "",
    price: (query.get("price") ?? "").split(",").filter((v) => v !== "").map(Number),
    rating: Number(query.get("rating") ?? 0),
    open: query.get("open") === "1",
    radius: Number(query.get("radius") ?? 2000),
    sort: query.get("sort") ?? "distance",
    area: query.get("area") ?? "",
  };
  const go = (changes) => {
    const next = { ...filters, ...changes };
    const params = new URLSearchParams();
    if (next.category) params.set("category", next.category);
    if (next.price.length) params.set("price", next.price.join(","));
    if (next.rating) params.set("rating", String(next.rating));
    if (next.open) params.set("open", "1");
    params.set("radius", String(next.radius));
    params.set("sort", next.sort);
    if (next.area) params.set("area", next.area);
    location.hash = `#/browse?${params}`;
  };
  let categories = [];
  try {
    categories = (await call("catalog.categories")).categories;
  } catch (error) {
    return failed(context, error);
  }
  const chips = h(
    "div",
    { class: "chips", role: "group", "aria-label": t("browse.categories") },
    h("button", { type: "button", "aria-pressed": filters.category ? "false" : "true", onclick: () => go({ category: "" }) }, t("browse.title")),
    categories.map((c) =>
      h(
        "button",
        { type: "button", "aria-pressed": filters.category === c.id ? "true" : "false", onclick: () => go({ category: c.id }) },
        `${t(`category.${c.id}`)} (${c.count})`,
      ),
    ),
  );
  const form = h(
    "form",
    { class: "filters", "aria-label": t("filter.title") },
    h(
      "fieldset",
      {},
      h("legend", {}, t("filter.price")),
      [0, 1, 2, 3, 4].map((level) =>
        h(
          "label",
          {},
          h("input", {
            type: "checkbox",
            checked: filters.price.includes(level),
            onchange: (event) => go({ price: event.target.checked ? [...filters.price, level] : filters.price.filter((v) => v !== level) }),
          }),
          level === 0 ? t("filter.price_free") : "$".repeat(level),
        ),
      ),
    ),
    h(
      "label",
      {},
      t("filter.rating"),
      " ",
      h(
        "select",
        { onchange: (event) => go({ rating: Number(event.target.value) }) },
        [0, 3, 4, 4.5].map((r) => h("option", { value: r, selected: filters.rating === r }, r ? t("filter.rating_at_least", { rating: r }) : "—")),
      ),
    ),
    h("label", {}, h("input", { type: "checkbox", checked: filters.open, onchange: (event) => go({ open: event.target.checked }) }), t("filter.open_now")),
    h(
      "label",
      {},
      t("filter.distance"),
      " ",
      h(
        "select",
        { onchange: (event) => go({ radius: Number(event.target.value), area: "" }) },
        radii.map((r) => h("option", { value: r, selected: filters.radius === r }, t("filter.distance_within", { distance: distance(r) }))),
      ),
    ),
    h(
      "label",
      {},
      t("list.sort"),
      " ",
      h(
        "select",
        { onchange: (event) => go({ sort: event.target.value }) },
        [
          ["distance", "list.sort_distance"],
          ["rating", "list.sort_rating"],
          ["popularity", "list.sort_popularity"],
        ].map(([value, key]) => h("option", { value, selected: filters.sort === value }, t(key))),
      ),
    ),
    h("button", { type: "button", onclick: () => go({ area: JSON.stringify(context.map.bbox()) }) }, t("map.search_this_area")),
  );
  const params = { limit: 50, sort: filters.sort, lang: currentLanguage() };
  if (filters.category) params.categories = [filters.category];
  if (filters.price.length) params.price_levels = filters.price;
  if (filters.rating) params.min_rating = filters.rating;
  if (filters.open) params.open_now = true;
  try {
    let reply;
    if (filters.area) {
      reply = await call("search.viewport", { ...params, bbox: JSON.parse(filters.area), sort: filters.sort === "distance" ? "popularity" : filters.sort });
    } else {
      reply = await call("search.nearby", { ...params, near: await context.position(), radius_m: filters.radius });
    }
    await showPlaces(context, t("browse.title"), reply.hits, [chips, form]);
    if (filters.area) context.map.show(reply.hits, { fit: false });
  } catch (error) {
    failed(context, error);
  }
}

// MARK: Search

export async function search(context, query) {
  const q = (query.get("q") ?? "").trim();
  if (!q) return welcome(context);
  document.getElementById("q").value = q;
  try {
    const reply = await call("search.text", { q, near: await context.position(), limit: 30, lang: currentLanguage() });
    context.saved = await savedAmong(reply.hits);
    fill(
      context.panel,
      h("h1", {}, t("search.results", { count: reply.hits.length })),
      placeList(reply.hits, context, { empty: t("search.no_results", { query: q }) }),
    );
    context.map.show(reply.hits);
  } catch (error) {
    failed(context, error);
  }
}

// MARK: A place

const modes = [
  ["walking", "directions.mode_walking"],
  ["bicycling", "directions.mode_bicycling"],
  ["driving", "directions.mode_driving"],
  ["transit", "directions.mode_transit"],
];

export async function place(context, id, query) {
  let detail;
  try {
    detail = await call("catalog.get", { id, lang: currentLanguage() });
  } catch (error) {
    return error.code === "not_found" ? fill(context.panel, h("p", { class: "error", role: "alert" }, t("place.not_found"))) : failed(context, error);
  }
  context.saved = await savedAmong([detail]);
  context.map.show([detail]);
  const facts = h("dl", { class: "facts" });
  const fact = (key, value) => value && facts.append(h("dt", {}, t(key)), h("dd", {}, value));
  fact("place.address", detail.address);
  if (detail.phone) facts.append(h("dt", {}, t("place.phone")), h("dd", {}, h("a", { href: `tel:${detail.phone.replace(/[^+\d]/g, "")}` }, detail.phone)));
  fact("filter.price", price(detail.price_level));
  if (detail.website && /^https?:\/\//.test(detail.website)) {
    facts.append(h("dt", {}, t("button.website")), h("dd", {}, h("a", { href: detail.website, rel: "noopener noreferrer", target: "_blank" }, new URL(detail.website).host)));
  }
  const hours = openingHours(detail);
  const photos = photoStrip(detail);
  const directions = h("div", { class: "directions" }, h("h2", {}, t("directions.title")));
  const reviews = h("section", { class: "reviews", "aria-labelledby": "reviews-title" });
  fill(
    context.panel,
    h("h1", {}, detail.name, " ", favoriteButton(detail, context)),
    h("p", { class: "meta" }, t(`category.${detail.category}`)),
    detail.description ? h("p", { class: "description" }, detail.description) : null,
    photos,
    facts,
    hours,
    h("button", { type: "button", onclick: () => share(detail) }, t("button.share")),
    directions,
    reviews,
  );
  directionLinks(context, detail, directions);
  reviewList(context, detail, reviews, query.get("sort") ?? "default", query.get("order") ?? "desc");
}

/// The place's photos: those the catalog hosts (the small size, opening the large one), then
/// those it links to, each dropped if it does not load.
function photoStrip(detail) {
  const hosted = (detail.hosted_photos ?? []).map((photo) => {
    const base = `/places/${detail.id}/photos/${photo.id}`;
    const caption = [photo.caption, photo.attribution].filter(Boolean).join(" · ");
    return h(
      "figure",
      { class: "hosted" },
      h("a", { href: `${base}/1280.jpg`, target: "_blank" }, h("img", { src: `${base}/320.jpg`, alt: photo.caption ?? detail.name, loading: "lazy" })),
      caption ? h("figcaption", {}, caption) : null,
    );
  });
  const linked = (detail.photos ?? []).map((photo) =>
    h(
      "figure",
      {},
      h("img", { src: photo.url, alt: detail.name, loading: "lazy", referrerpolicy: "no-referrer", onerror: (event) => event.target.closest("figure")?.remove() }),
      photo.attribution ? h("figcaption", {}, photo.attribution) : null,
    ),
  );
  return hosted.length || linked.length ? h("div", { class: "photos" }, hosted, linked) : null;
}

function openingHours(detail) {
  if (!detail.opening_hours?.length && !detail.opening_hours_text) return null;
  const list = h("ul", { class: "hours" });
  for (const span of detail.opening_hours ?? []) list.append(h("li", {}, `${t(`day.${span.day}`)} ${span.open}–${span.close}`));
  return h("section", {}, h("h2", {}, t("place.opening_hours")), detail.opening_hours_text ? h("p", {}, detail.opening_hours_text) : null, list);
}

async function directionLinks(context, detail, box) {
  const from = await context.position();
  for (const [mode, key] of modes) {
    try {
      const way = await call("directions.get", { from, to: detail.id, mode });
      box.append(
        h(
          "p",
          {},
          h("strong", {}, t(key)),
          " ",
          t("directions.estimate", { minutes: Math.max(1, Math.round(way.duration_s / 60)) }),
          " ",
          h(
            "span",
            { class: "links" },
            h("a", { href: way.links.google, rel: "noopener noreferrer", target: "_blank", title: t("directions.open_google") }, "Google"),
            " · ",
            h("a", { href: way.links.apple, rel: "noopener noreferrer", target: "_blank", title: t("directions.open_apple") }, "Apple"),
            " · ",
            h("a", { href: way.links.osm, rel: "noopener noreferrer", target: "_blank", title: t("directions.open_osm") }, "OSM"),
          ),
        ),
      );
    } catch {
      // No directions for this mode: the others still show.
    }
  }
}

async function share(detail) {
  try {
    const reply = await call("share.place", { place_id: detail.id, network: "email" });
    if (navigator.share) await navigator.share({ title: detail.name, text: reply.text, url: reply.url });
    else {
      await navigator.clipboard?.writeText(reply.url);
      notice(t("share.link_copied"));
    }
  } catch (error) {
    if (error?.name !== "AbortError") notice(errorText(error));
  }
}

async function reviewList(context, detail, box, sort, order) {
  const resort = (changes) => {
    const params = new URLSearchParams({ sort, order, ...changes });
    history.replaceState(null, "", `#/place/${detail.id}?${params}`);
    reviewList(context, detail, box, params.get("sort"), params.get("order"));
  };
  let page;
  try {
    page = await call("reviews.list", { place_id: detail.id, sort, order, limit: 20 });
  } catch (error) {
    return fill(box, h("p", { class: "error" }, errorText(error)));
  }
  fill(
    box,
    h("h2", { id: "reviews-title" }, t("place.reviews")),
    h(
      "div",
      { class: "sort" },
      h(
        "label",
        {},
        t("reviews.sort"),
        " ",
        h(
          "select",
          { onchange: (event) => resort({ sort: event.target.value }) },
          [
            ["default", "reviews.sort_default"],
            ["rating", "reviews.sort_rating"],
            ["date", "reviews.sort_date"],
          ].map(([value, key]) => h("option", { value, selected: sort === value }, t(key))),
        ),
      ),
      " ",
      h(
        "label",
        {},
        h(
          "select",
          { "aria-label": t("reviews.sort"), onchange: (event) => resort({ order: event.target.value }) },
          [
            ["desc", "reviews.descending"],
            ["asc", "reviews.ascending"],
          ].map(([value, key]) => h("option", { value, selected: order === value }, t(key))),
        ),
      ),
    ),
    page.reviews.length === 0
      ? h("p", { class: "empty" }, t("place.no_reviews"))
      : h(
          "ul",
          { class: "review-list" },
          page.reviews.map((review) =>
            h(
              "li",
              { class: "review" },
              h("span", { class: "stars", "aria-label": `${review.rating}/5` }, stars(review.rating)),
              " ",
              h("strong", {}, review.user?.name ?? ""),
              h("p", {}, review.text ?? ""),
            ),
          ),
        ),
    session.token ? reviewForm(context, detail, box) : h("p", {}, h("a", { href: "#/account" }, t("button.log_in"))),
  );
}

function reviewForm(context, detail, box) {
  const rating = h(
    "select",
    { id: "review-rating", required: true },
    [5, 4, 3, 2, 1].map((r) => h("option", { value: r }, `${stars(r)} (${r})`)),
  );
  const text = h("textarea", { id: "review-text", rows: 3, maxlength: 2000 });
  const status = h("p", { role: "status" });
  return h(
    "form",
    {
      class: "review-form",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          await call("reviews.add", { place_id: detail.id, rating: Number(rating.value), text: text.value });
          reviewList(context, detail, box, "date", "desc");
        } catch (error) {
          fill(status, errorText(error));
        }
      },
    },
    h("h3", {}, t("reviews.your_review")),
    h("label", { for: "review-rating" }, t("reviews.your_rating")),
    rating,
    h("label", { for: "review-text" }, t("reviews.your_review")),
    text,
    h("button", { type: "submit" }, t("button.post")),
    status,
  );
}

// MARK: Favorites

export async function favorites(context) {
  if (!session.token) {
    fill(context.panel, h("h1", {}, t("favorites.title")), h("p", {}, h("a", { href: "#/account" }, t("button.log_in"))));
    context.map.show([]);
    return;
  }
  try {
    const page = await call("favorites.list", { limit: 100 });
    const places = page.items.map((item) => item.place ?? item);
    context.saved = new Set(places.map((p) => p.id));
    fill(
      context.panel,
      h("h1", {}, t("favorites.title")),
      places.length === 0 ? [h("p", { class: "empty" }, t("favorites.empty")), h("p", {}, t("favorites.empty_hint"))] : placeList(places, context),
    );
    context.map.show(places);
  } catch (error) {
    failed(context, error);
  }
}

// MARK: Account

/// The password policy as it is typed: each rule, kept or not.
const passwordRules = [
  ["8+", (p) => [...p].length >= 8],
  ["A-Z", (p) => /\p{Lu}/u.test(p)],
  ["a-z", (p) => /\p{Ll}/u.test(p)],
  ["0-9", (p) => /\d/.test(p)],
];

export async function account(context) {
  if (session.token) {
    let me = null;
    try {
      me = await call("profile.get");
    } catch (error) {
      if (error.code === "unauthenticated") {
        session.forget();
        context.signedInChanged();
        return account(context);
      }
    }
    fill(
      context.panel,
      h("h1", {}, t("profile.title")),
      me ? h("p", {}, me.name ?? "", " (", me.username ?? "", ")") : null,
      h(
        "button",
        {
          type: "button",
          id: "logout",
          onclick: async () => {
            try {
              await call("auth.logout");
            } catch {
              // Signed out here whatever the gateway says.
            }
            session.forget();
            context.signedInChanged();
            location.hash = "#/";
          },
        },
        t("button.log_out"),
      ),
    );
    return;
  }
  const loginStatus = h("p", { role: "alert", class: "error" });
  const login = h(
    "form",
    {
      id: "login",
      onsubmit: async (event) => {
        event.preventDefault();
        const form = event.target;
        try {
          const reply = await call("auth.login", { username: form.username.value, password: form.password.value });
          session.keep(reply.token, form.remember.checked);
          context.signedInChanged();
          location.hash = "#/";
        } catch (error) {
          fill(loginStatus, error.code === "unauthenticated" ? t("account.login_failed") : errorText(error));
        }
      },
    },
    h("h1", {}, t("account.login_title")),
    h("label", { for: "login-username" }, t("account.username")),
    h("input", { id: "login-username", name: "username", autocomplete: "username", required: true }),
    h("label", { for: "login-password" }, t("account.password")),
    h("input", { id: "login-password", name: "password", type: "password", autocomplete: "current-password", required: true }),
    h("label", {}, h("input", { name: "remember", type: "checkbox" }), t("account.remember")),
    h("button", { type: "submit" }, t("button.log_in")),
    loginStatus,
  );
  const rules = h("ul", { class: "rules", "aria-live": "polite" });
  const showRules = (password) =>
    fill(
      rules,
      passwordRules.map(([label, kept]) => h("li", { class: kept(password) ? "kept" : "missing" }, `${kept(password) ? "✓" : "✗"} ${label}`)),
    );
  showRules("");
  const registerStatus = h("p", { role: "alert", class: "error" });
  const register = h(
    "form",
    {
      id: "register",
      onsubmit: async (event) => {
        event.preventDefault();
        const form = event.target;
        const fields = { username: form.username.value, email: form.email.value, name: form.name.value, password: form.password.value };
        try {
          await call("auth.register", fields);
          const reply = await call("auth.login", { username: fields.username, password: fields.password });
          session.keep(reply.token, false);
          context.signedInChanged();
          location.hash = "#/";
        } catch (error) {
          fill(registerStatus, error.code === "already_exists" ? t("account.taken") : errorText(error));
        }
      },
    },
    h("h2", {}, t("account.register_title")),
    h("label", { for: "register-username" }, t("account.username")),
    h("input", { id: "register-username", name: "username", autocomplete: "username", required: true }),
    h("label", { for: "register-email" }, t("account.email")),
    h("input", { id: "register-email", name: "email", type: "email", autocomplete: "email", required: true }),
    h("label", { for: "register-name" }, t("account.display_name")),
    h("input", { id: "register-name", name: "name", autocomplete: "name", required: true }),
    h("label", { for: "register-password" }, t("account.password")),
    h("input", {
      id: "register-password",
      name: "password",
      type: "password",
      autocomplete: "new-password",
      required: true,
      "aria-describedby": "password-rule",
      oninput: (event) => showRules(event.target.value),
    }),
    h("p", { id: "password-rule", class: "hint" }, t("account.password_rule")),
    rules,
    h("button", { type: "submit" }, t("button.register")),
    registerStatus,
  );
  fill(context.panel, login, register);
  context.map.show([]);
}

// MARK: Alerts

/// How long ago `iso` was, in the interface's words.
function ago(iso) {
  return t("annotations.minutes_ago", { minutes: Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 60000)) });
}

/// An annotation's values in the form's words (`Hazard · Flooding`), else as they are.
function describe(values, form) {
  return (form?.fields ?? [])
    .map((field) => field.choices.find((choice) => choice.value === values?.[field.name])?.label)
    .filter(Boolean)
    .join(" · ") || Object.values(values ?? {}).join(" · ");
}

function annotationList(annotations, form, empty) {
  if (annotations.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "ul",
    { class: "annotations" },
    annotations.map((a) =>
      h(
        "li",
        { class: "annotation" },
        h("strong", {}, describe(a.values, form)),
        a.distance_m !== undefined ? h("span", { class: "meta" }, " · ", distance(a.distance_m)) : null,
        a.text ? h("p", {}, a.text) : null,
        h("span", { class: "meta" }, ago(a.created_at)),
      ),
    ),
  );
}

/// The annotation form: a select per field, a dependent field offering only the choices of
/// what its parent field holds (and hidden while it offers none).
function annotationForm(form, onSubmit) {
  const selects = new Map();
  const rows = new Map();
  const refresh = () => {
    for (const field of form.fields) {
      if (!field.depends_on) continue;
      const parent = selects.get(field.depends_on)?.value ?? "";
      const select = selects.get(field.name);
      const kept = select.value;
      const choices = field.choices.filter((choice) => choice.parent === parent);
      fill(select, h("option", { value: "" }, "—"), choices.map((choice) => h("option", { value: choice.value, selected: choice.value === kept }, choice.label)));
      rows.get(field.name).hidden = choices.length === 0;
      select.required = Boolean(field.required) && choices.length > 0;
    }
  };
  const fields = form.fields.map((field) => {
    const id = `annotation-${field.name}`;
    const select = h(
      "select",
      { id, name: field.name, required: Boolean(field.required), onchange: refresh },
      h("option", { value: "" }, "—"),
      field.depends_on ? [] : field.choices.map((choice) => h("option", { value: choice.value }, choice.label)),
    );
    selects.set(field.name, select);
    const row = h("div", { class: "field" }, h("label", { for: id }, field.label), select);
    rows.set(field.name, row);
    return row;
  });
  const text = h("textarea", { id: "annotation-text", rows: 2, maxlength: 500, placeholder: t("annotations.text_placeholder") });
  const status = h("p", { role: "status" });
  refresh();
  return h(
    "form",
    {
      class: "annotation-form",
      onsubmit: async (event) => {
        event.preventDefault();
        const values = {};
        for (const [name, select] of selects) if (select.value && !rows.get(name).hidden) values[name] = select.value;
        try {
          await onSubmit(values, text.value);
          fill(status, t("annotations.posted"));
          text.value = "";
        } catch (error) {
          fill(status, errorText(error));
        }
      },
    },
    h("h2", {}, t("annotations.new")),
    fields,
    h("label", { for: "annotation-text" }, t("annotations.text_placeholder")),
    text,
    h("button", { type: "submit" }, t("button.post")),
    status,
  );
}

export async function alerts(context) {
  const near = await context.position();
  let form = null;
  try {
    form = await call("annotations.form", { near, lang: currentLanguage() });
  } catch {
    // No form set: the nearby annotations still show.
  }
  const live = h("section", { id: "live-alerts", "aria-live": "assertive" });
  const nearby = h("section", {}, h("h2", {}, t("annotations.title")));
  const inbox = h("section", {}, h("h2", {}, t("alerts.inbox")));
  const show = async () => {
    try {
      const reply = await call("annotations.nearby", { near, radius_m: 5000, limit: 50 });
      fill(nearby, h("h2", {}, t("annotations.title")), annotationList(reply.annotations, form, t("alerts.inbox_empty")));
      context.map.show(reply.annotations.map((a) => ({ ...a, name: describe(a.values, form) || t("annotations.title") })), { link: false });
    } catch (error) {
      fill(nearby, h("p", { class: "error" }, errorText(error)));
    }
  };
  context.onAlerts = (found) => {
    if (found.length) live.prepend(h("div", { class: "alert", role: "alert" }, h("h2", {}, t("alerts.title")), annotationList(found, form, "")));
  };
  fill(
    context.panel,
    h("h1", {}, t("alerts.title")),
    live,
    session.token && form ? annotationForm(form, async (values, text) => {
      await call("annotations.submit", { ...near, values, text: text || undefined });
      await show();
    }) : null,
    nearby,
    session.token ? inbox : h("p", {}, h("a", { href: "#/account" }, t("button.log_in"))),
  );
  await show();
  if (!session.token) return;
  try {
    // Where the user is: alerts for what is near come in the answer.
    const report = await call("notify.location", near);
    context.onAlerts(report.alerts);
    const entries = (await call("notify.inbox", { limit: 50 })).entries;
    fill(
      inbox,
      h("h2", {}, t("alerts.inbox")),
      entries.length === 0
        ? h("p", { class: "empty" }, t("alerts.inbox_empty"))
        : annotationList(entries.map((entry) => entry.alert), form, ""),
    );
  } catch (error) {
    fill(inbox, h("p", { class: "error" }, errorText(error)));
  }
}

// MARK: Groups

export async function groups(context) {
  if (!session.token) return fill(context.panel, h("h1", {}, t("groups.title")), h("p", {}, h("a", { href: "#/account" }, t("button.log_in"))));
  let list;
  try {
    list = await call("groups.list");
  } catch (error) {
    return failed(context, error);
  }
  const status = h("p", { role: "status" });
  fill(
    context.panel,
    h("h1", {}, t("groups.title")),
    h(
      "ul",
      { class: "groups" },
      list.groups.map((group) => h("li", {}, h("a", { href: `#/group/${group.id}` }, group.name))),
      list.invitations.map((invitation) =>
        h(
          "li",
          {},
          invitation.group?.name ?? "",
          " ",
          h(
            "button",
            {
              type: "button",
              onclick: async () => {
                await call("groups.accept", { group_id: invitation.group?.id ?? invitation.group_id });
                context.route();
              },
            },
            t("button.ok"),
          ),
        ),
      ),
    ),
    h(
      "form",
      {
        class: "group-form",
        onsubmit: async (event) => {
          event.preventDefault();
          try {
            const group = await call("groups.create", { name: event.target.name.value });
            location.hash = `#/group/${group.id}`;
          } catch (error) {
            fill(status, errorText(error));
          }
        },
      },
      h("label", { for: "group-name" }, t("groups.create")),
      h("input", { id: "group-name", name: "name", required: true, maxlength: 100 }),
      h("button", { type: "submit" }, t("groups.create")),
      status,
    ),
  );
  context.map.show([]);
}

/// A group: its members, sharing one's position with it, its live map and its chat.
export async function group(context, id) {
  let detail;
  let me;
  try {
    [detail, me] = await Promise.all([call("groups.get", { group_id: id }), call("profile.get")]);
  } catch (error) {
    return failed(context, error);
  }
  const conversation = `group:${id}`;
  const members = new Map((detail.members ?? []).map((member) => [member.user?.id ?? member.id, member.user ?? member]));
  const positions = new Map();
  const drawMap = () =>
    context.map.show(
      [...positions.values()].map((p) => ({ id: p.user_id, lat: p.lat, lon: p.lon, name: members.get(p.user_id)?.name ?? String(p.user_id) })),
      { link: false, fit: positions.size > 0 },
    );
  const messages = h("ol", { class: "messages", "aria-live": "polite" });
  const noMessages = h("p", { class: "empty" }, t("chat.empty"));
  const seen = new Set();
  const addMessage = (message) => {
    if (seen.has(message.seq)) return;
    seen.add(message.seq);
    noMessages.remove();
    const item = h("li", { class: "message" }, h("strong", {}, message.from?.name ?? ""), " ", h("span", { class: "text" }, message.text ?? ""));
    // In order of their sequence numbers, whatever order they came in.
    const after = [...messages.children].find((other) => Number(other.dataset.seq) > message.seq);
    item.dataset.seq = String(message.seq);
    messages.insertBefore(item, after ?? null);
  };
  const memberCount = h("p", { class: "meta" });
  const memberList = h("ul", { class: "members" });
  const showMembers = () => {
    fill(memberCount, t("groups.members", { count: members.size }));
    fill(memberList, [...members.values()].map((member) => h("li", {}, member.name ?? member.username ?? "")));
  };
  showMembers();
  context.onPush = async (push) => {
    if (push.topic === "group.position" && push.body.group_ids?.includes(id)) {
      positions.set(push.body.user_id, push.body);
      if (!members.has(push.body.user_id)) {
        // Someone who joined since: the group as it is now.
        const now = await call("groups.get", { group_id: id });
        for (const member of now.members ?? []) members.set(member.user.id, member.user);
        showMembers();
      }
      drawMap();
    } else if (push.topic === "chat.message" && push.body.conversation === conversation) {
      addMessage(push.body);
    }
  };
  const text = h("input", { id: "chat-text", name: "text", required: true, maxlength: 2000, placeholder: t("chat.placeholder"), autocomplete: "off" });
  const status = h("p", { role: "status" });
  const sharing = h("input", {
    id: "share-position",
    type: "checkbox",
    checked: detail.members?.find((member) => member.user?.id === me.id)?.sharing ?? false,
    onchange: async (event) => {
      try {
        await call("groups.sharing", { group_id: id, on: event.target.checked });
        if (event.target.checked) await call("groups.position", await context.position());
      } catch (error) {
        fill(status, errorText(error));
      }
    },
  });
  fill(
    context.panel,
    h("h1", {}, detail.name),
    memberCount,
    memberList,
    h("label", {}, sharing, t("groups.share_location")),
    h("h2", {}, t("chat.title")),
    messages,
    h(
      "form",
      {
        class: "chat-form",
        onsubmit: async (event) => {
          event.preventDefault();
          try {
            const sent = await call("chat.send", { to: conversation, text: text.value, client_msg_id: `web-${Date.now()}-${Math.floor(Math.random() * 1e6)}` });
            addMessage({ seq: sent.seq, text: text.value, from: { name: t("profile.title") } });
            text.value = "";
          } catch (error) {
            fill(status, errorText(error));
          }
        },
      },
      h("label", { for: "chat-text", class: "visually-hidden" }, t("chat.placeholder")),
      text,
      h("button", { type: "submit" }, t("button.send")),
    ),
    status,
  );
  try {
    const [map, history] = await Promise.all([call("groups.map", { group_id: id }), call("chat.history", { conversation, limit: 50 })]);
    for (const p of map.positions) positions.set(p.user.id, { ...p, user_id: p.user.id });
    drawMap();
    if (seen.size === 0) messages.before(noMessages);
    for (const message of history.messages) addMessage(message);
  } catch (error) {
    fill(status, errorText(error));
  }
}

// MARK: Tours

export async function tours(context) {
  try {
    const reply = await call("tours.list", { near: await context.position(), radius_m: 20000, lang: currentLanguage() });
    fill(
      context.panel,
      h("h1", {}, t("tours.title")),
      reply.tours.length === 0
        ? h("p", { class: "empty" }, t("tours.empty"))
        : h("ul", { class: "places" }, reply.tours.map((tour) => h("li", { class: "place" }, h("a", { href: `#/tour/${tour.id}`, class: "name" }, tour.name), h("span", { class: "meta" }, t("tours.stops", { count: tour.stops.length }))))),
    );
    context.map.show(reply.tours.map((tour) => ({ id: tour.id, lat: tour.lat, lon: tour.lon, name: tour.name })), { link: false });
  } catch (error) {
    failed(context, error);
  }
}

/// A map's pixel (col, row) for a point, by inverting its affine transform
/// (lon = a·col + b·row + c, lat = d·col + e·row + f).
function pixel(transform, lat, lon) {
  const { a, b, c, d, e, f } = transform;
  const det = a * e - b * d;
  return { col: ((lon - c) * e - b * (lat - f)) / det, row: (a * (lat - f) - d * (lon - c)) / det };
}

/// The bearing from one fix to the next, in degrees from north: the heading when the device gives none.
function bearing(from, to) {
  const rad = Math.PI / 180;
  const y = Math.sin((to.lon - from.lon) * rad) * Math.cos(to.lat * rad);
  const x = Math.cos(from.lat * rad) * Math.sin(to.lat * rad) - Math.sin(from.lat * rad) * Math.cos(to.lat * rad) * Math.cos((to.lon - from.lon) * rad);
  return (Math.atan2(y, x) / rad + 360) % 360;
}

/// A tour: its stops on the map and in order, its own drawn map (our tiles, in Leaflet's
/// CRS.Simple), and, once started, where the walker is: heading, the next stop and how far.
export async function tour(context, id) {
  let detail;
  try {
    detail = await call("tours.get", { id, lang: currentLanguage() });
  } catch (error) {
    return failed(context, error);
  }
  let drawn = null;
  try {
    drawn = await call("tours.map.get", { tour_id: id });
  } catch {
    // A tour without a map of its own: the stops are on the background map.
  }
  context.map.show(detail.places);
  const status = h("div", { id: "walk", "aria-live": "polite" });
  const stops = h("ol", { class: "stops" }, detail.places.map((place) => h("li", { "data-id": place.id }, h("a", { href: `#/place/${place.id}` }, place.name))));
  const mapBox = h("div", { id: "tour-map", class: "tour-map", hidden: true, role: "region", "aria-label": t("tours.map") });
  let tourMap = null;
  let walker = null;
  const showTourMap = () => {
    mapBox.hidden = !mapBox.hidden;
    if (mapBox.hidden || tourMap || !drawn) return;
    const top = drawn.levels.at(-1).z;
    tourMap = L.map(mapBox, { crs: L.CRS.Simple, minZoom: 0, maxZoom: top + 1 });
    const corner = tourMap.unproject([drawn.width, drawn.height], top);
    const bounds = L.latLngBounds([0, 0], corner);
    L.tileLayer(`/tours/${id}/map/{z}/{x}/{y}.jpg`, { tileSize: drawn.tile_size, minNativeZoom: 0, maxNativeZoom: top, bounds, noWrap: true }).addTo(tourMap);
    tourMap.fitBounds(bounds);
    for (const place of detail.places) {
      const at = pixel(drawn.transform, place.lat, place.lon);
      L.marker(tourMap.unproject([at.col, at.row], top), { title: place.name, alt: place.name }).addTo(tourMap);
    }
  };
  let watch = null;
  let last = null;
  const walk = async (fix) => {
    const here = { lat: fix.coords.latitude, lon: fix.coords.longitude };
    const heading = fix.coords.heading ?? (last && (last.lat !== here.lat || last.lon !== here.lon) ? bearing(last, here) : null);
    last = here;
    try {
      const at = await call("tours.locate", { tour_id: id, ...here, ...(heading === null ? {} : { course_deg: Math.round(heading) }) });
      fill(
        status,
        at.finished ? h("p", { class: "done" }, t("tours.finished")) : null,
        at.next_stop ? h("p", { class: "next" }, h("strong", {}, t("tours.next_stop")), " ", t("tours.distance_to_next", { distance: distance(at.next_stop.distance_m), name: at.next_stop.name })) : null,
        heading === null ? null : h("p", { class: "heading" }, t("tours.heading", { degrees: Math.round(heading) })),
        h("p", { class: "progress" }, t("tours.progress", { visited: at.visited_count, total: at.stop_count })),
      );
      context.map.showMe(here);
      if (drawn) {
        const p = pixel(drawn.transform, here.lat, here.lon);
        if (p.col < 0 || p.row < 0 || p.col > drawn.width || p.row > drawn.height) status.append(h("p", { class: "meta" }, t("tours.off_map")));
      }
      if (tourMap && drawn) {
        const p = pixel(drawn.transform, here.lat, here.lon);
        const point = tourMap.unproject([p.col, p.row], drawn.levels.at(-1).z);
        if (!walker) walker = L.circleMarker(point, { radius: 8, color: "#c62828", fillOpacity: 0.9 }).addTo(tourMap);
        else walker.setLatLng(point);
      }
    } catch (error) {
      fill(status, h("p", { class: "error" }, errorText(error)));
    }
  };
  const start = h(
    "button",
    {
      type: "button",
      id: "start-tour",
      onclick: () => {
        if (watch !== null) {
          navigator.geolocation.clearWatch(watch);
          watch = null;
          fill(start, t("button.start_tour"));
          return;
        }
        if (!session.token) return (location.hash = "#/account");
        watch = navigator.geolocation.watchPosition(walk, (error) => fill(status, h("p", { class: "error" }, error.message)), { enableHighAccuracy: true });
        fill(start, t("button.stop_tour"));
      },
    },
    t("button.start_tour"),
  );
  fill(
    context.panel,
    h("h1", {}, detail.name),
    detail.description ? h("p", { class: "description" }, detail.description) : null,
    h("p", { class: "meta" }, t("tours.stops", { count: detail.places.length })),
    start,
    drawn ? h("button", { type: "button", id: "show-tour-map", onclick: showTourMap }, t("tours.map")) : null,
    status,
    mapBox,
    stops,
  );
}
