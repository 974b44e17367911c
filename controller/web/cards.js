// Card codes (DESIGN.md "Card notation"): rank A 2-9 T J Q K, suit S H D C, e.g. "TD".
// A card the public may not see (the hole card before it is turned) is `null` and is drawn
// face down. Built with DOM calls only: nothing from the wire is ever parsed as HTML.

const RANKS = { A: "A", T: "10", J: "J", Q: "Q", K: "K" };
const SUITS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const SUIT_NAMES = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const RANK_NAMES = { A: "ace", T: "ten", J: "jack", Q: "queen", K: "king" };

export function isCardCode(code) {
  return typeof code === "string" && /^[A2-9TJQK][SHDC]$/.test(code);
}

export function cardEl(code, { small = false } = {}) {
  const el = document.createElement("span");
  el.className = "card" + (small ? " small" : "");
  if (code === null || code === undefined) {
    el.classList.add("back");
    el.dataset.card = "hidden";
    el.title = "hole card, face down";
    el.setAttribute("aria-label", "face-down card");
    return el;
  }
  if (!isCardCode(code)) {
    el.classList.add("unknown");
    el.dataset.card = String(code);
    el.textContent = "?";
    el.title = `unreadable card code ${String(code)}`;
    return el;
  }
  const r = code[0];
  const s = code[1];
  el.dataset.card = code;
  if (s === "H" || s === "D") el.classList.add("red");
  const name = `${RANK_NAMES[r] ?? r} of ${SUIT_NAMES[s]}`;
  el.title = name;
  el.setAttribute("aria-label", name);
  const rank = document.createElement("span");
  rank.className = "rank";
  rank.textContent = RANKS[r] ?? r;
  const suit = document.createElement("span");
  suit.className = "suit";
  suit.textContent = SUITS[s];
  el.append(rank, suit);
  return el;
}

export function cardsEl(cards, opts) {
  const row = document.createElement("span");
  row.className = "cards";
  for (const c of Array.isArray(cards) ? cards : []) row.append(cardEl(c, opts));
  return row;
}
