// A following student's page, drawn by a catch-up that ran the class's fragment alone
// (vitviz/app/students.py): the browser still names the page its last whole run opened. Give the
// address bar the step's own address and the sidebar's highlight to the step's link, as the
// whole run that opens the step would. A constant script: its one value is a page's address
// written in code.
(() => {
  const path = "{path}";
  const here = document.location.pathname.replace(/[^/]*$/, path);
  if (here !== document.location.pathname) {
    window.history.replaceState(window.history.state, "", here + document.location.search);
  }
  const links = [...document.querySelectorAll("{nav_link}")];
  const named = (link) => new URL(link.href, document.baseURI).pathname.replace(/^.*\//, "") === path;
  const followed = links.find(named);
  const current = links.find((link) => link.getAttribute("aria-current") === "page");
  if (followed && current && followed !== current) {
    // the two links trade their looks (Streamlit's classes): the theme's own highlight, whatever it is
    const trade = (a, b) => [a.className, b.className] = [b.className, a.className];
    trade(followed, current);
    const inner = [followed.querySelectorAll("span"), current.querySelectorAll("span")];
    inner[0].forEach((span, i) => inner[1][i] && trade(span, inner[1][i]));
    current.removeAttribute("aria-current");
    followed.setAttribute("aria-current", "page");
  }
})();
