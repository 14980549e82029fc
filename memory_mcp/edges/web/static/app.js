// memory-mcp browser view: a little progressive enhancement, nothing required for the forms to work.
document.querySelectorAll("form.purge").forEach(function (form) {
  var input = form.querySelector("input[name=confirm_text]");
  var button = form.querySelector("button");
  function check() {
    var v = input.value.trim();
    button.disabled = !(v === input.dataset.id || v === input.dataset.title);
  }
  input.addEventListener("input", check);
  check();
});
document.querySelectorAll("form.filters select").forEach(function (select) {
  select.addEventListener("change", function () { select.form.requestSubmit(); });
});
