// The lab's gallery (vitviz.app.gallery): a page of thumbnails in one element, each a button with
// its picture and caption; the one up close is pressed (aria-pressed). A click (or Enter / Space)
// sends the trigger "open" with the thumbnail's number. Built again only when the data changes.
const TRIGGER = "open"; // vitviz.app.gallery.TRIGGER

export default function (component) {
  const { parentElement, setTriggerValue, data } = component;
  const root = parentElement.querySelector(".vitviz-gallery");
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const text = new TextDecoder().decode(bytes);
  root.vitvizSend = setTriggerValue;
  if (root.vitvizText === text) return;
  root.vitvizText = text;
  const shown = JSON.parse(text);
  root.style.setProperty("--vitviz-gallery-columns", String(shown.columns));
  root.style.setProperty("--vitviz-gallery-marked", String(shown.colour));
  root.replaceChildren(
    ...shown.items.map((item) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "vitviz-thumb";
      button.setAttribute("aria-pressed", String(item.number === shown.current));
      const picture = document.createElement("img");
      picture.src = item.src;
      picture.alt = item.caption;
      const caption = document.createElement("span");
      caption.textContent = item.caption;
      button.append(picture, caption);
      button.addEventListener("click", () => root.vitvizSend(TRIGGER, item.number));
      return button;
    }),
  );
}
