"""The item's stimuli (captions and images) as one block that appears whole or not at all.

Streamlit draws a rerun's elements as they arrive and images load after their text, so a plain
page shows the next item's caption beside the last item's image for a moment. This component
(Streamlit's components v2: plain JavaScript in the page, no iframe) clears the old item at once,
decodes every image of the new one (already decoded ahead for the next items, `ahead`), puts
captions and images on screen in one DOM change, and after that frame is painted reports the
item as shown: the server's reading clock starts there (`queues.mark_shown`). Captions are set
as text (`textContent`), never as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from foil_studio.annotate.task_types import Task
from foil_studio.data.images import data_uri

CSS = """
.stimulus { display: flex; gap: 1.2rem; align-items: flex-start; flex-wrap: wrap; min-height: 2rem; }
.stimulus .images { display: flex; gap: 0.8rem; flex: 1 1 55%; }
.stimulus figure { margin: 0; flex: 1 1 0; text-align: center; }
.stimulus img { max-height: 30vh; max-width: 100%; width: auto; object-fit: contain; }
.stimulus figcaption, .stimulus .missing { font-size: 0.85rem; opacity: 0.75; }
.stimulus .captions { flex: 1 1 40%; display: flex; flex-direction: column; gap: 0.4rem; }
.stimulus .caption { white-space: pre-wrap; font-family: var(--st-font, sans-serif); }
"""

JS = """
const decoded = window.__foilDecoded || (window.__foilDecoded = new Map());  // src -> Promise<bool>
function decode(src) {
  if (!decoded.has(src)) {
    const image = new Image();
    image.src = src;
    decoded.set(src, image.decode().then(() => true, () => false));
    if (decoded.size > 64) decoded.delete(decoded.keys().next().value);
  }
  return decoded.get(src);
}
function build(data) {
  const block = document.createElement("div");
  block.className = "stimulus";
  block.dataset.item = data.key;
  if (data.images.length) {
    const images = document.createElement("div");
    images.className = "images";
    for (const picture of data.images) {
      const figure = document.createElement("figure");
      if (picture.src) {
        const img = document.createElement("img");
        img.src = picture.src;
        img.alt = picture.label;
        figure.appendChild(img);
      } else {
        const missing = document.createElement("div");
        missing.className = "missing";
        missing.textContent = picture.label + ": image missing or unreadable";
        figure.appendChild(missing);
      }
      const label = document.createElement("figcaption");
      label.textContent = picture.label;
      figure.appendChild(label);
      images.appendChild(figure);
    }
    block.appendChild(images);
  }
  const captions = document.createElement("div");
  captions.className = "captions";
  for (const [role, text] of data.captions) {
    const line = document.createElement("div");
    line.className = "caption";
    line.textContent = role + ": " + text;
    captions.appendChild(line);
  }
  block.appendChild(captions);
  return block;
}
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const host = parentElement.querySelector(".stimulus-host");
  if (!data) return;
  if (host.dataset.item === data.key) {  // the same item drawn again (a rerun): nothing changes on screen
    // ...but when the server refused an answer because it never heard the item was shown (the
    // report was lost on its way), the page asks again (`again` grows) and a painted item is reported again
    if (host.dataset.painted === data.key && data.again > Number(host.dataset.again || 0)) {
      host.dataset.again = String(data.again);
      setTriggerValue("shown", data.key);
    }
    return;
  }
  host.dataset.item = data.key;
  host.dataset.again = String(data.again || 0);
  host.replaceChildren();  // nothing of the last item stays while this one loads
  for (const src of data.ahead) decode(src);  // the next items' images, ready before they are needed
  Promise.all(data.images.map((p) => (p.src ? decode(p.src) : Promise.resolve(true)))).then(() => {
    if (host.dataset.item !== data.key) return;  // a newer item arrived meanwhile
    host.replaceChildren(build(data));  // captions and images in one change
    requestAnimationFrame(() => requestAnimationFrame(() => {
      if (host.dataset.item !== data.key) return;
      host.dataset.painted = data.key;
      setTriggerValue("shown", data.key);  // painted: the clock starts
    }));
  });
}
"""

# In the page's own DOM (no shadow root): its class names are its own, and tests and the bench
# watch the block with a MutationObserver.
_STIMULUS = st.components.v2.component(
    "foil_stimulus", html='<div class="stimulus-host"></div>', css=CSS, js=JS, isolate_styles=False
)


def show_stimulus(
    task: Task, images: list[tuple[str, Path | None]], ahead: list[Path], on_shown: Callable[[], None], again: int = 0
) -> str:
    """Mount the item's stimuli; `on_shown` runs when the browser reports them whole on screen.
    Raising `again` asks the browser to report an item it has already painted once more (the
    server refused an answer because the first report never reached it).
    Returns the key the browser reports (batch part and item, as `shown_key` reads it)."""
    key = f"{task.item_id}:{task.part}"
    data = {
        "key": key,
        "again": again,
        "captions": [list(caption) for caption in task.captions],
        "images": [{"label": label, "src": data_uri(path) if path else None} for label, path in images],
        "ahead": [data_uri(path) for path in ahead],
    }
    _STIMULUS(key="stimulus", data=data, on_shown_change=on_shown)
    return key


def shown_key() -> str | None:
    """The item key the browser last reported shown (inside `on_shown`)."""
    state = st.session_state.get("stimulus")
    return None if state is None else (state.get("shown") if hasattr(state, "get") else getattr(state, "shown", None))
