// EWIF of speculative decoding and of a vertical cascade: the closed forms of csd_lib/price/ewif.py
// (the paper's Cor 4.2 and Thm 4.3, docs/REFERENCE.md), for the explorer's sliders. tests/workbook/test_site.py
// runs these functions with node and compares them with the Python ones.
(function (root) {
  "use strict";
  function close(a, b) { return Math.abs(a - b) <= 1e-8 + 1e-5 * Math.abs(b); }  // numpy.isclose

  // Thm 4.1: phi_{alpha,k}(x) = 1 + (x - 1)(1 - (alpha x)^{k+1}) / (1 - alpha x), summed as a series near alpha x = 1.
  function phi(alpha, k, x) {
    var ax = alpha * x, ratio = 0, i;
    if (Math.abs(1 - ax) < 1e-6) { for (i = 0; i <= k; i++) ratio += Math.pow(ax, i); }
    else { ratio = (1 - Math.pow(ax, k + 1)) / (1 - ax); }
    return 1 + (x - 1) * ratio;
  }

  // Cor 4.2: tokens per SD step, (1 - alpha^{k+1}) / (1 - alpha).
  function expectedTokensSd(alpha, k) {
    return close(alpha, 1) ? k + 1 : (1 - Math.pow(alpha, k + 1)) / (1 - alpha);
  }

  // Cor 4.2: EWIF of SD = (1 - alpha^{k+1}) / ((1 - alpha)(c k + 1)).
  function ewifSd(alpha, k, c) { return expectedTokensSd(alpha, k) / (c * k + 1); }

  // Thm 4.3: (1 - alpha * phi_{alpha',k}(alpha)^n) / ((1 - alpha)(1 + n c_d1 + n k c_d2)); phi^n is a power.
  function ewifVc(alpha, alphaPrime, k, n, cD1, cD2) {
    var cost = 1 + n * cD1 + n * k * cD2;
    var tokens = close(alpha, 1) ? n * expectedTokensSd(alphaPrime, k) + 1
      : (1 - alpha * Math.pow(phi(alphaPrime, k, alpha), n)) / (1 - alpha);
    return tokens / cost;
  }

  var api = {phi: phi, expectedTokensSd: expectedTokensSd, ewifSd: ewifSd, ewifVc: ewifVc};
  if (typeof module !== "undefined" && module.exports) { module.exports = api; } else { root.CsdEwif = api; }
})(this);
