/* The site's projector mode (course/publish/site.py copies this file to the site's root; every page loads it in
   its <head>, so a page is drawn in the chosen mode from the start).

   Projector mode sets the class site-projector on <html>; site.css does the rest (larger prose and code, code
   wrapped). It is switched by the nav's "Projector mode" button, or by the address: ?projector or #projector
   turns it on, ?projector=off or #projector=off turns it off. The choice is remembered (localStorage) for every
   page of the site. In projector mode figures are drawn at FIGURE_SCALE times their natural size where the page
   has the width (as the text is twice its size, the figures' own labels stay readable next to it). No network,
   no library. */
(function () {
  "use strict";
  var KEY = "attention-site-projector"; // localStorage: "on" or "off"
  var FIGURE_SCALE = 1.5;
  var root = document.documentElement;
  root.classList.add("site-js");

  function remembered() {
    try {
      return window.localStorage.getItem(KEY) === "on";
    } catch (error) {
      return false; // storage refused (a private window, a browser setting): reading mode
    }
  }

  function remember(on) {
    try {
      window.localStorage.setItem(KEY, on ? "on" : "off");
    } catch (error) {
      /* not remembered, still switched */
    }
  }

  // ?projector, #projector (on) or projector=off (off) in the address; null when the address says nothing
  function fromAddress() {
    var words = window.location.search.slice(1).split("&").concat([window.location.hash.slice(1)]);
    for (var i = 0; i < words.length; i++) {
      var match = /^projector(?:=(on|off|1|0))?$/.exec(words[i]);
      if (match) return !(match[1] === "off" || match[1] === "0");
    }
    return null;
  }

  function sizeFigures(on) {
    var images = document.querySelectorAll(".jp-OutputArea-output img, .jp-RenderedMarkdown img");
    Array.prototype.forEach.call(images, function (img) {
      if (!on) {
        img.style.removeProperty("width");
        return;
      }
      var size = function () {
        if (img.naturalWidth) img.style.width = "min(100%, " + Math.round(img.naturalWidth * FIGURE_SCALE) + "px)";
      };
      if (img.complete) size();
      else img.addEventListener("load", size, { once: true });
    });
  }

  function show(on) {
    root.classList.toggle("site-projector", on);
    var buttons = document.querySelectorAll(".site-projector-toggle");
    Array.prototype.forEach.call(buttons, function (button) {
      button.setAttribute("aria-pressed", on ? "true" : "false");
    });
    if (document.body) sizeFigures(on);
  }

  // Switch, keeping the reader's place: the first cell in view stays where it was on the screen.
  function switchTo(on) {
    var cells = document.querySelectorAll(".jp-Cell"), anchor = null;
    for (var i = 0; i < cells.length && !anchor; i++) if (cells[i].getBoundingClientRect().bottom > 0) anchor = cells[i];
    var before = anchor ? anchor.getBoundingClientRect().top : 0;
    remember(on);
    show(on);
    if (anchor && window.scrollY > 0) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
  }

  var asked = fromAddress();
  if (asked !== null) remember(asked);
  show(asked !== null ? asked : remembered());

  document.addEventListener("DOMContentLoaded", function () {
    var buttons = document.querySelectorAll(".site-projector-toggle");
    Array.prototype.forEach.call(buttons, function (button) {
      button.addEventListener("click", function () {
        switchTo(!root.classList.contains("site-projector"));
      });
    });
    show(root.classList.contains("site-projector"));
  });
  window.addEventListener("hashchange", function () {
    var asked = fromAddress();
    if (asked !== null) switchTo(asked);
  });
})();
