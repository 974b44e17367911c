// Building the page's elements: DOM calls only, so nothing from the wire is ever parsed as HTML.

// h("span", {class: "x", text: "..."}, ...children): one element; `style` goes through the CSSOM (allowed
// under the server's strict style-src), `data-*` into the dataset.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v; // CSSOM: allowed under a strict style-src
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("data-")) el.dataset[k.slice(5).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Rebuild `el`'s children only when `key` differs from the last build.
export function renderIfChanged(el, key, build) {
  if (el._key === key) return;
  el._key = key;
  el.replaceChildren(...[build()].flat().filter(Boolean));
}
