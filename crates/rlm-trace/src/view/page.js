(function () {
  'use strict';
  // Filters the page's items (a run's turns, a query's model calls) by text; `#search=WORDS`
  // in the address pre-fills the box.
  var turns = Array.prototype.slice.call(document.querySelectorAll('#turns > .turn'));
  var item = document.getElementById('turns').getAttribute('data-item') || 'turn';
  var rows = document.querySelectorAll('#timeline .rows .row');
  var input = document.getElementById('search');
  var counter = document.getElementById('match-count');
  var texts = null;
  function apply(query) {
    query = query.trim().toLowerCase();
    if (query && texts === null) {
      texts = turns.map(function (turn) { return turn.textContent.toLowerCase(); });
    }
    var shown = 0;
    turns.forEach(function (turn, index) {
      var match = !query || texts[index].indexOf(query) >= 0;
      turn.hidden = !match;
      if (rows[index]) { rows[index].hidden = !match; }
      if (match) { shown += 1; }
    });
    counter.textContent = query
      ? shown + ' of ' + turns.length + ' ' + item + 's match'
      : turns.length + ' ' + item + (turns.length === 1 ? '' : 's');
  }
  var timer = null;
  input.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { apply(input.value); }, 120);
  });
  function setAll(open) {
    document.querySelectorAll('details').forEach(function (details) { details.open = open; });
  }
  document.getElementById('expand-all').addEventListener('click', function () { setAll(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { setAll(false); });
  var hash = location.hash.slice(1);
  if (hash.indexOf('search=') === 0) {
    try { input.value = decodeURIComponent(hash.slice(7)); } catch (e) { input.value = hash.slice(7); }
  }
  apply(input.value);
  window.addEventListener('load', function () {
    document.documentElement.setAttribute('data-load-ms', performance.now().toFixed(1));
  });
})();
