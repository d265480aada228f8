// Once the run has drawn the page (Streamlit marks its app "running" until then), do one thing:
// scroll the page's box to its top (a page the session arrives at), or bring a keyed container
// into view (the lab's thumbnails open their image below the gallery). Done earlier, the old
// page's elements, replaced one by one, would pull the view back (the browser's scroll anchoring).
// A constant script: its only argument is a key written in code, never a user's text.
(() => {
  const app = document.querySelector("{app_root}");
  const started = Date.now();
  const act = () => {
    if (app && app.getAttribute("data-test-script-state") === "running" && Date.now() - started < 10000) {
      setTimeout(act, 50);
      return;
    }
    const target = "{target}";
    if (target) document.querySelector(target)?.scrollIntoView({block: "start", behavior: "smooth"});
    else document.querySelector("{main}")?.scrollTo({top: 0});
  };
  act();
})();
