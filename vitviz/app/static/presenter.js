// Presenter mode (presenter.py): the keys a clicker sends (→ / PageDown, ← / PageUp) press Next /
// Previous, Escape leaves; the buttons are found by their keys, whatever language they read in.
// Keys typed into a field, a select box or a slider stay theirs.
(function () {
  if (window.__vitvizKeys) return;
  window.__vitvizKeys = true;
  const press = (selector) => document.querySelector(selector)?.click();
  document.addEventListener("keydown", (event) => {
    if (!document.getElementById("{marker}")) return;
    const target = event.target;
    if (target && target.closest("input, textarea, select, [role=slider], [role=combobox], [role=listbox]")) return;
    if (event.key === "ArrowRight" || event.key === "PageDown") { press("{next} button"); event.preventDefault(); }
    else if (event.key === "ArrowLeft" || event.key === "PageUp") { press("{previous} button"); event.preventDefault(); }
    else if (event.key === "Escape") { press("{leave} button"); }
  });
})();
