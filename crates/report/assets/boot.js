/* barrage HTML report: collects script errors for the self-check (#barrage-selfcheck), which
   report.js writes. Runs first, so that errors of uPlot and report.js are caught too. */
(function () {
  "use strict";
  var errors = (window.__barrageErrors = []);
  function add(message) {
    errors.push(String(message));
    if (window.__barrageFlush) window.__barrageFlush();
  }
  window.onerror = function (message, source, line, column, error) {
    add((error && error.stack) || message + " at " + source + ":" + line + ":" + column);
  };
  window.addEventListener("unhandledrejection", function (e) {
    add("unhandled rejection: " + ((e.reason && e.reason.stack) || e.reason));
  });
  var consoleError = console.error;
  console.error = function () {
    add("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return consoleError.apply(console, arguments);
  };
})();
