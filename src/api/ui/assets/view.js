// Where the review page is, kept in its URL so that a reload, the back button, a bookmark or a
// second tab shows the same view: `?session=s1&turn=2` (a turn), `&file=a.txt` (one of its
// files), `?blame=a.txt` (a file's blame), with `filter=s1` (one session's timeline) and
// `unreviewed=1`. The view goes in the query, never in the fragment: the fragment is where the
// login hands the page its CSRF token (app.js takes it out at once), and a URL one copies must
// never hold it.
"use strict";

const VIEW_KEYS = ["filter", "unreviewed", "session", "turn", "file", "blame"];

/** The view a query names; the parts that make no sense alone (a file without a turn) are left out. */
function viewOf(search) {
  const query = new URLSearchParams(search);
  const view = {};
  for (const key of VIEW_KEYS) {
    const value = query.get(key);
    if (value !== null && value !== "") view[key] = value;
  }
  view.unreviewed = view.unreviewed === "1" || undefined;
  const turn = Number(view.turn);
  if (view.session === undefined || !Number.isSafeInteger(turn) || turn < 1) {
    delete view.session;
    delete view.turn;
    delete view.file;
  } else {
    view.turn = turn;
  }
  // A blame is a view of its own; a turn of another session than the filtered one is not shown.
  if (view.blame !== undefined || (view.filter !== undefined && view.session !== view.filter)) {
    delete view.session;
    delete view.turn;
    delete view.file;
  }
  return withoutEmpty(view);
}

function withoutEmpty(view) {
  return Object.fromEntries(Object.entries(view).filter(([, value]) => value !== undefined && value !== null));
}

/** The page's URL for `view` (the path and query only: no fragment, so no token). */
function urlOf(view) {
  const query = new URLSearchParams();
  for (const key of VIEW_KEYS) {
    const value = view[key];
    if (value === undefined || value === null || value === false) continue;
    query.set(key, value === true ? "1" : String(value));
  }
  const text = query.toString();
  return text ? `${location.pathname}?${text}` : location.pathname;
}

/** The timeline's part of the current view (its filters), for a view of something else. */
function listView() {
  const view = ui.view || {};
  return withoutEmpty({ filter: view.filter, unreviewed: view.unreviewed });
}

const turnView = (session, turn) => ({ ...listView(), session, turn });
const fileView = (session, turn, file) => ({ ...listView(), session, turn, file });
const blameView = (path) => ({ ...listView(), blame: path });

/** Shows `view` as a new entry of the tab's history (the back button returns to this one). */
function go(view) {
  const url = urlOf(view);
  if (url !== location.pathname + location.search) history.pushState(null, "", url);
  return showView(viewOf(url.slice(location.pathname.length)));
}

/** A link to `view`: opens in another tab as it is, or here as `go` does. */
function viewLink(view, text) {
  return el("a", {
    href: urlOf(view),
    text,
    onclick: (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      go(view);
    },
  });
}

window.addEventListener("popstate", () => showView(viewOf(location.search)));
