// A student following a class (vitviz/app/where.py): ask the server where the class is, naming the
// mark this page was drawn with (a plain GET, no Streamlit run); the server answers once the class's
// mark is another (or after a while with the same one, and the page asks again at once). When the
// answer differs from the page's mark, press the page's hidden "catch up" button, whose run draws
// the class's step. One loop per browser tab: a page drawn again runs this script again, which finds
// the loop already going. A constant script: the mark and the address come from the page's
// [data-vitviz-class] element.
(() => {
  if (window.vitvizFollowing) return;
  window.vitvizFollowing = true;
  const EVERY_MS = 500, RUNNING_MS = 100, HELD_MS = 1000, PRESS_AGAIN_MS = 5000;
  let pressedFor = null, pressedAt = 0;
  const drawnNow = () => document.querySelector("[data-vitviz-class]");
  const running = () => document.querySelector("{app_root}")?.getAttribute("data-test-script-state") === "running";
  const tick = async () => {
    const drawn = drawnNow();
    if (!drawn || running()) {  // a run draws the page: ask with the mark it leaves
      setTimeout(tick, RUNNING_MS);
      return;
    }
    const part = Number(drawn.dataset.vitvizPart);
    const asked = "?drawn=" + encodeURIComponent(drawn.dataset.vitvizClass) + "&part=" + part;
    let next = EVERY_MS;
    try {
      const began = Date.now();
      const answer = await fetch(drawn.dataset.vitvizAddress + asked, {cache: "no-store"});
      // "STEP_MARK SLIDE_MARK": the part this page follows (vitviz/app/where.py, marks)
      const now = answer.ok ? (await answer.text()).trim().split(" ")[part] ?? null : null;
      const shown = drawnNow()?.dataset.vitvizClass;
      if (now !== null && now === shown) {
        // held until the server's wait ended: ask again at once (a server that answers at once: later)
        if (Date.now() - began >= HELD_MS) next = 0;
      } else if (now !== null && !running() && (now !== pressedFor || Date.now() - pressedAt > PRESS_AGAIN_MS)) {
        // the same answer is pressed for once, then again only if the page still shows the old mark later
        document.querySelector("{catch_up} button")?.click();
        pressedFor = now;
        pressedAt = Date.now();
        next = RUNNING_MS;
      }
    } catch (err) {
      // the server is away (a restart, a network gap): ask again at the next tick
    }
    setTimeout(tick, next);
  };
  tick();
})();
