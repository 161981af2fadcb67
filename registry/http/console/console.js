// The capreg web console: catalogs, search, schemas, workflows and evaluation plots over the
// JSON/HTTP API. Data from the server is only ever set as text (textContent), never as HTML.
"use strict";

(() => {
  // sessionStorage, not localStorage or a cookie: the key lives as long as this tab, is
  // never sent unless the code asks, and never appears in a URL or the history.
  const KEY_SLOT = "capreg.apiKey";
  const PLOTS_SHOWN = 4;

  const $ = (id) => document.getElementById(id);
  const ui = {
    alert: $("alert"),
    who: $("who"),
    forget: $("forget"),
    keySection: $("key-section"),
    keyForm: $("key-form"),
    key: $("key"),
    console: $("console"),
    catalogsHeading: $("catalogs-heading"),
    catalogsSummary: $("catalogs-summary"),
    catalogs: $("catalogs"),
    catalogFilter: $("catalog-filter"),
    workflowSection: $("workflow-section"),
    workflowHeading: $("workflow-heading"),
    workflow: $("workflow"),
    searchForm: $("search-form"),
    query: $("query"),
    limit: $("limit"),
    searchStatus: $("search-status"),
    weak: $("weak"),
    scoresHelp: $("scores-help"),
    hits: $("hits"),
    schemaSection: $("schema-section"),
    schemaHeading: $("schema-heading"),
    schema: $("schema"),
    resultsSection: $("results-section"),
    resultsSummary: $("results-summary"),
    results: $("results"),
  };
  let plotUrls = [];

  // --- DOM: every string becomes a text node ---------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "onclick") node.addEventListener("click", value);
      else if (name === "class") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function button(label, onclick, props) {
    return el("button", { type: "button", onclick, ...props }, label);
  }

  function terms(pairs) {
    return el(
      "dl",
      { class: "terms" },
      pairs
        .filter(([, value]) => value !== "" && value !== undefined && value !== null)
        .map(([term, value]) => el("div", {}, el("dt", {}, term), el("dd", {}, value))),
    );
  }

  function focusHeading(heading) {
    heading.focus();
    heading.scrollIntoView({ block: "start" });
  }

  // --- The API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, detail) {
      super(message);
      this.status = status;
      this.code = code;
      this.detail = detail;
    }
  }

  async function call(path, { method = "GET", body } = {}) {
    const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY_SLOT) || ""}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (exc) {
      throw new ApiError(0, "UNAVAILABLE", `the server could not be reached (${exc.message})`, {});
    }
    if (response.ok) return response;
    let detail = {};
    try {
      detail = (await response.json()).error || {};
    } catch (_exc) {
      // Not the API's error body (a proxy's page, say): the status line says enough.
    }
    throw new ApiError(
      response.status,
      detail.code || `HTTP ${response.status}`,
      detail.message || response.statusText || "the request failed",
      detail,
    );
  }

  async function callJson(path, options) {
    return (await call(path, options)).json();
  }

  // --- Errors ----------------------------------------------------------------------------

  function clearAlert() {
    ui.alert.replaceChildren();
  }

  function showAlert(...content) {
    // Emptied first so that the same message twice is announced twice.
    ui.alert.replaceChildren();
    window.setTimeout(() => ui.alert.replaceChildren(el("p", {}, ...content)), 0);
  }

  function suggestionButtons(detail) {
    const suggestions = detail.suggestions || {};
    const ids = Object.values(suggestions).flat();
    if (!ids.length) return [];
    return [" Did you mean: ", ids.map((id) => [button(id, () => openSchema([id])), " "])];
  }

  // Every failure of a signed-in call lands here: a key the server no longer takes sends the
  // user back to the key form; anything else is said in the alert region.
  function fail(exc) {
    if (exc instanceof ApiError && exc.status === 401) {
      signOut();
      showAlert(`The server refused the key (${exc.status} ${exc.code}): ${exc.message}`);
      ui.key.focus();
      return;
    }
    if (exc instanceof ApiError) {
      showAlert(`${exc.code}: ${exc.message}`, ...suggestionButtons(exc.detail));
    } else {
      showAlert(`Unexpected error: ${exc.message}`);
    }
  }

  // --- Signing in and out ----------------------------------------------------------------

  function signOut() {
    sessionStorage.removeItem(KEY_SLOT);
    for (const url of plotUrls) URL.revokeObjectURL(url);
    plotUrls = [];
    for (const node of [ui.catalogs, ui.hits, ui.schema, ui.workflow, ui.results]) {
      node.replaceChildren();
    }
    for (const node of [ui.catalogsSummary, ui.searchStatus, ui.resultsSummary, ui.who]) {
      node.textContent = "";
    }
    ui.catalogFilter.replaceChildren(el("option", { value: "" }, "All catalogs"));
    ui.query.value = "";
    for (const node of [ui.console, ui.forget, ui.weak, ui.scoresHelp, ui.schemaSection]) {
      node.hidden = true;
    }
    ui.workflowSection.hidden = true;
    ui.resultsSection.hidden = true;
    ui.keySection.hidden = false;
  }

  async function enter() {
    let listing;
    try {
      listing = await callJson("/v1/catalogs?with_warnings=true");
    } catch (exc) {
      signOut();
      if (exc instanceof ApiError && (exc.status === 401 || exc.status === 403)) {
        showAlert(`The server refused this key (${exc.status} ${exc.code}): ${exc.message}`);
      } else {
        showAlert(`Could not list the catalogs: ${exc.code || "error"}: ${exc.message}`);
      }
      ui.key.focus();
      return;
    }
    ui.keySection.hidden = true;
    ui.console.hidden = false;
    ui.forget.hidden = false;
    ui.who.textContent = `Signed in: ${renderCatalogs(listing)}`;
    ui.query.focus();
    loadPlots();
  }

  ui.keyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = ui.key.value.trim();
    ui.key.value = "";
    if (!key) {
      showAlert("Paste an API key first.");
      ui.key.focus();
      return;
    }
    clearAlert();
    sessionStorage.setItem(KEY_SLOT, key);
    enter();
  });

  ui.forget.addEventListener("click", () => {
    signOut();
    clearAlert();
    showAlert("The key was forgotten. Paste a key to sign in again.");
    ui.key.focus();
  });

  // --- Catalogs and workflows ------------------------------------------------------------

  function renderCatalogs(listing) {
    const catalogs = listing.catalogs || [];
    const tools = catalogs.reduce((sum, c) => sum + (c.tool_count || 0), 0);
    const seen =
      `this key sees ${catalogs.length} catalog${catalogs.length === 1 ? "" : "s"} ` +
      `and ${tools} tool${tools === 1 ? "" : "s"}.`;
    ui.catalogsSummary.textContent =
      `${seen[0].toUpperCase()}${seen.slice(1, -1)} (index generation ${listing.index_generation}).`;
    ui.catalogs.replaceChildren(...catalogs.map(renderCatalog));
    ui.catalogFilter.replaceChildren(
      el("option", { value: "" }, "All catalogs"),
      ...catalogs.map((c) => el("option", { value: c.name }, c.name)),
    );
    return seen;
  }

  function renderCatalog(catalog) {
    const warnings = catalog.warnings || [];
    const workflows = catalog.workflows || [];
    return el(
      "li",
      { class: "catalog" },
      el("h3", {}, catalog.title || catalog.name),
      catalog.description ? el("p", {}, catalog.description) : null,
      terms([
        ["Name", catalog.name],
        ["Tools", String(catalog.tool_count)],
        ["Version", catalog.version],
        ["Revision", String(catalog.revision)],
      ]),
      workflows.length
        ? el(
            "div",
            { class: "workflows" },
            el("h4", {}, "Workflows"),
            el(
              "ul",
              {},
              workflows.map((w) =>
                el(
                  "li",
                  {},
                  button(w.title || w.id, () => openWorkflow(w.id, w.initial_state), {
                    "aria-label": `Open workflow ${w.title || w.id}`,
                  }),
                  ` starts in state ${w.initial_state}`,
                  w.description ? el("p", { class: "help" }, w.description) : null,
                ),
              ),
            ),
          )
        : null,
      warnings.length
        ? el(
            "details",
            { class: "lint" },
            el("summary", {}, `${warnings.length} lint finding${warnings.length === 1 ? "" : "s"}`),
            el("ul", {}, warnings.map((w) => el("li", {}, w))),
          )
        : el("p", { class: "help" }, "No lint findings."),
    );
  }

  async function openWorkflow(workflow, state) {
    clearAlert();
    let answer;
    try {
      const params = new URLSearchParams({ workflow, state: state || "" });
      answer = await callJson(`/v1/affordances?${params}`);
    } catch (exc) {
      fail(exc);
      return;
    }
    const moves = answer.affordances || [];
    ui.workflowHeading.textContent = `Workflow ${answer.workflow}: state ${answer.state}`;
    ui.workflow.replaceChildren(
      answer.description ? el("p", {}, answer.description) : null,
      el(
        "p",
        { class: "help" },
        answer.terminal ? "The workflow may end in this state. " : "",
        moves.length
          ? `${moves.length} move${moves.length === 1 ? "" : "s"} this key may make:`
          : "No move this key may make here.",
      ),
      el(
        "ul",
        { class: "moves" },
        moves.map((move) =>
          el(
            "li",
            {},
            button(move.tool_id, () => openSchema(move.next_call?.ids || [move.tool_id])),
            move.when ? ` when called with ${move.when}` : "",
            " leads to ",
            move.next_state === answer.state
              ? `the same state (${move.next_state})`
              : button(`state ${move.next_state}`, () =>
                  openWorkflow(move.then_call?.workflow || answer.workflow, move.next_state),
                ),
            move.summary ? el("p", { class: "help" }, move.summary) : null,
          ),
        ),
      ),
    );
    ui.workflowSection.hidden = false;
    focusHeading(ui.workflowHeading);
  }

  // --- Search ----------------------------------------------------------------------------

  const number = (value) => (typeof value === "number" ? value.toFixed(3) : String(value));

  // A new search starts from a clean slate: the last answer's hits, its weak-match notice
  // and the schema opened from it all belong to a request no longer on screen, so neither an
  // answer nor an error is shown beside them.
  function clearSearch() {
    ui.hits.replaceChildren();
    ui.searchStatus.textContent = "";
    ui.weak.hidden = true;
    ui.weak.textContent = "";
    ui.scoresHelp.hidden = true;
    ui.schema.replaceChildren();
    ui.schemaSection.hidden = true;
  }

  ui.searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearAlert();
    clearSearch();
    const q = ui.query.value.trim();
    if (!q) {
      showAlert("Type what the tool should do, then search.");
      ui.query.focus();
      return;
    }
    const params = new URLSearchParams({ q });
    if (ui.limit.value !== "0") params.set("limit", ui.limit.value);
    if (ui.catalogFilter.value) params.set("catalog", ui.catalogFilter.value);
    ui.searchStatus.textContent = "Searching…";
    let answer;
    try {
      answer = await callJson(`/v1/search?${params}`);
    } catch (exc) {
      clearSearch();
      fail(exc);
      return;
    }
    renderHits(q, answer);
  });

  function renderHits(q, answer) {
    const hits = answer.hits || [];
    const weak = Boolean(answer.weak_match);
    ui.weak.hidden = !weak;
    ui.weak.textContent = weak
      ? "Weak match: nothing this key can see fits this request well. Rephrase it, " +
        "or treat these hits as guesses."
      : "";
    const count = hits.length
      ? `${hits.length} hit${hits.length === 1 ? "" : "s"} for “${q}”`
      : `No tool this key can see matches “${q}”`;
    // One sentence for the live region, the weak match included, so it is heard too.
    ui.searchStatus.textContent =
      `${count}${answer.cached ? ", from the cache" : ""} ` +
      `(index generation ${answer.index_generation}).${weak ? " Weak match." : ""}`;
    ui.scoresHelp.hidden = !hits.length;
    ui.hits.replaceChildren(
      ...hits.map((hit) =>
        el(
          "li",
          { class: "hit" },
          button(hit.id, () => openSchema(hit.next_call?.ids || [hit.id]), {
            class: "hit-open",
            "aria-label": `Open schema of ${hit.id}`,
          }),
          el("p", {}, hit.summary),
          el(
            "p",
            {
              class: "scores",
              "aria-describedby": "scores-help",
              title: "score: rank within this answer only (may be negative); " +
                "similarity: request to description, from −1 to 1",
            },
            `score ${number(hit.score)} · similarity ${number(hit.similarity)} · catalog ${hit.catalog}`,
          ),
        ),
      ),
    );
  }

  // --- Schemas ---------------------------------------------------------------------------

  function typeOf(schema) {
    if (!schema || typeof schema !== "object") return "any";
    if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
    if ("const" in schema) return `exactly ${JSON.stringify(schema.const)}`;
    for (const key of ["anyOf", "oneOf"]) {
      if (Array.isArray(schema[key])) return schema[key].map(typeOf).join(" or ");
    }
    if (typeof schema.$ref === "string") return schema.$ref.split("/").pop();
    let type = Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type || "any";
    if (type === "array" && schema.items) type = `array of ${typeOf(schema.items)}`;
    return schema.format ? `${type} (${schema.format})` : type;
  }

  const sentence = (text) => (text && !/[.!?]$/.test(text) ? `${text}.` : text);

  function parameterTable(input, headingId) {
    const properties = input.properties || {};
    const names = Object.keys(properties);
    if (!names.length) return el("p", {}, "This tool takes no arguments.");
    const required = new Set(input.required || []);
    return el(
      "div",
      { class: "table-wrap" },
      el(
        "table",
        { "aria-labelledby": headingId },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            ["Name", "Type", "Required", "Description"].map((h) => el("th", { scope: "col" }, h)),
          ),
        ),
        el(
          "tbody",
          {},
          names.map((name) => {
            const p = properties[name] || {};
            const notes = [sentence(p.description || "")];
            if ("default" in p) notes.push(`Default: ${JSON.stringify(p.default)}.`);
            return el(
              "tr",
              {},
              el("th", { scope: "row" }, el("code", {}, name)),
              el("td", {}, typeOf(p)),
              el("td", {}, required.has(name) ? "yes" : "no"),
              el("td", {}, notes.filter(Boolean).join(" ")),
            );
          }),
        ),
      ),
    );
  }

  function renderLinks(links) {
    if (!links.length) return el("p", { class: "help" }, "No links: no call is known to follow this tool.");
    return el(
      "ul",
      { class: "links" },
      links.map((link) => {
        const args = Object.entries(link.arguments || {});
        return el(
          "li",
          {},
          button(link.target_id, () => openSchema(link.next_call?.ids || [link.target_id]), {
            "aria-label": `Open schema of ${link.target_id} (${link.rel})`,
          }),
          ` ${link.rel} (${link.derived ? "derived from the schemas" : "declared by the catalog"})`,
          args.length
            ? el(
                "p",
                { class: "help" },
                "Arguments from this tool's result: ",
                args.map(([arg, path], i) => [i ? ", " : "", el("code", {}, arg), " ← ", el("code", {}, path)]),
              )
            : null,
        );
      }),
    );
  }

  function rawJson(label, value, open) {
    return el(
      "details",
      { class: "raw", open },
      el("summary", {}, label),
      // Focusable so a keyboard user can scroll a long schema.
      el("pre", { tabindex: "0", "aria-label": label }, el("code", {}, JSON.stringify(value, null, 2))),
    );
  }

  let toolCount = 0;

  function renderTool(tool) {
    // The HTTP API gives the schemas and annotations as JSON values (null: no output schema).
    const input = tool.input_schema || {};
    const output = tool.output_schema || null;
    const annotations = Object.entries(tool.annotations || {});
    const parametersId = `parameters-${++toolCount}`;
    return el(
      "article",
      { class: "tool" },
      el("h3", {}, tool.id),
      el("p", { class: "description" }, tool.description),
      terms([
        ["Function name", el("code", {}, tool.function_name)],
        ["Catalog", tool.catalog],
        ["Catalog version", tool.catalog_version],
        ["Catalog revision", String(tool.catalog_revision)],
        ["Annotations", annotations.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ")],
      ]),
      el("h4", { id: parametersId }, "Parameters"),
      parameterTable(input, parametersId),
      el("h4", {}, "Links"),
      renderLinks(tool.links || []),
      rawJson("Raw JSON Schema (input)", input, true),
      output ? rawJson("Raw JSON Schema (output)", output) : null,
    );
  }

  async function openSchema(ids) {
    clearAlert();
    let answer;
    try {
      answer = await callJson("/v1/schemas", { method: "POST", body: { ids } });
    } catch (exc) {
      fail(exc);
      return;
    }
    ui.schema.replaceChildren(...(answer.tools || []).map(renderTool));
    ui.schemaHeading.textContent = `Schema: ${ids.join(", ")}`;
    ui.schemaSection.hidden = false;
    focusHeading(ui.schemaHeading);
  }

  // --- Evaluation plots ------------------------------------------------------------------

  async function showPlot(name) {
    // Fetched with the key (an <img src> could not send it) and shown from a blob: URL.
    const blob = await (await call(`/v1/results/${encodeURIComponent(name)}`)).blob();
    const url = URL.createObjectURL(blob);
    plotUrls.push(url);
    const title = name.replace(/\.png$/, "");
    return el(
      "figure",
      {},
      el("img", { src: url, alt: `Evaluation plot ${title}: recall by retriever` }),
      el("figcaption", {}, title),
    );
  }

  async function renderPlots(names, count) {
    const shown = names.slice(0, count);
    const figures = await Promise.all(shown.map(showPlot));
    ui.results.replaceChildren(...figures);
    ui.resultsSummary.replaceChildren(
      `The ${shown.length} newest of ${names.length} plot${names.length === 1 ? "" : "s"}. `,
      shown.length < names.length
        ? button(`Show all ${names.length} plots`, () => renderPlots(names, names.length).catch(fail))
        : "",
    );
  }

  async function loadPlots() {
    let names;
    try {
      names = await callJson("/v1/results");
    } catch (exc) {
      // Plots are optional: a server without them (404) simply has none to show.
      if (exc instanceof ApiError && exc.status === 404) return;
      fail(exc);
      return;
    }
    if (!Array.isArray(names) || !names.length) return;
    ui.resultsSection.hidden = false;
    try {
      await renderPlots(names, PLOTS_SHOWN);
    } catch (exc) {
      fail(exc);
    }
  }

  // --- Start -----------------------------------------------------------------------------

  if (sessionStorage.getItem(KEY_SLOT)) {
    enter();
  } else {
    ui.key.focus();
  }
})();
