// A student following a class (vitviz/app/where.py): twice a second, ask the server where the class
// is (a plain GET, no Streamlit run); when the answer differs from the mark this page was drawn
// with, press the page's hidden "catch up" button, whose run draws the class's step. One loop per
// browser tab: a page drawn again runs this script again, which finds the loop already going.
// A constant script: the mark and the address come from the page's [data-vitviz-class] element.
(() => {
  if (window.vitvizFollowing) return;
  window.vitvizFollowing = true;
  const EVERY_MS = 500, PRESS_AGAIN_MS = 5000;
  let pressedFor = null, pressedAt = 0;
  const tick = async () => {
    const drawn = document.querySelector("[data-vitviz-class]");
    const running = document.querySelector("{app_root}")?.getAttribute("data-test-script-state") === "running";
    if (drawn && !running) {
      try {
        const answer = await fetch(drawn.dataset.vitvizAddress, {cache: "no-store"});
        // "STEP_MARK SLIDE_MARK": the part this page follows (vitviz/app/where.py, marks)
        const now = answer.ok ? (await answer.text()).trim().split(" ")[Number(drawn.dataset.vitvizPart)] ?? null : null;
        const stale = now !== null && now !== drawn.dataset.vitvizClass;
        // the same answer is pressed for once, then again only if the page still shows the old mark later
        if (stale && (now !== pressedFor || Date.now() - pressedAt > PRESS_AGAIN_MS)) {
          document.querySelector("{catch_up} button")?.click();
          pressedFor = now;
          pressedAt = Date.now();
        }
      } catch (err) {
        // the server is away (a restart, a network gap): ask again at the next tick
      }
    }
    setTimeout(tick, EVERY_MS);
  };
  tick();
})();
