//! review.html: the report as one self-contained page. Each upstream file is a collapsible
//! section; each of its hunks sits beside the generated hunks it produced, with an anchor
//! of its own (`#u-PATH-N`, the Markdown report's). A script checks on load that every
//! link inside the page resolves and opens the section a link points into; it writes what
//! it found into the body's `data-anchors` (`ok N`, or the links that do not resolve).

use std::fmt::Write as _;

use super::{anchor, lines, path_slug, rules_text, Cause, GeneratedHunk, Review, Side};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1b1b}\
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:2em}\
details{border:1px solid #ccc;border-radius:4px;margin:.5em 0;padding:.2em .6em}\
summary{cursor:pointer;font-family:monospace}\
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin:.6em 0;border-top:1px solid #eee;padding-top:.4em}\
pre{margin:.2em 0;padding:.3em;background:#f7f7f7;overflow-x:auto;font-size:12px}\
.del{color:#a00}.add{color:#070}.meta{color:#555;font-size:12px}\
section:target{outline:2px solid #e6a700}";

/// Checks that every in-page link resolves, and opens the `<details>` around a link's target.
const SCRIPT: &str = r##"
(function () {
  function openTo(id) {
    var t = document.getElementById(id);
    for (var e = t; e; e = e.parentElement) { if (e.tagName === 'DETAILS') { e.open = true; } }
    return t;
  }
  var links = document.querySelectorAll('a[href^="#"]');
  var broken = [];
  for (var i = 0; i < links.length; i++) {
    var id = decodeURIComponent(links[i].getAttribute('href').slice(1));
    if (!document.getElementById(id)) { broken.push(id); }
  }
  document.body.setAttribute('data-anchors', broken.length ? 'broken: ' + broken.join(' ') : 'ok ' + links.length);
  function follow() { if (location.hash.length > 1) { var t = openTo(decodeURIComponent(location.hash.slice(1))); if (t) { t.scrollIntoView(); } } }
  window.addEventListener('hashchange', follow);
  follow();
})();
"##;

pub fn render(review: &Review, before: &Side, after: &Side, timing: &str) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    s.push_str(&escape(&format!("Review: {} → {}", before.label, after.label)));
    let _ = write!(s, "</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Review of a Candle bump</h1>\n");
    s.push_str("<ul>\n");
    for line in review.summary(before, after, timing).lines().filter_map(|l| l.trim_start().strip_prefix("- ")) {
        let _ = writeln!(s, "<li>{}</li>", escape(line).replace("**", ""));
    }
    s.push_str("</ul>\n");
    if let Err(e) = &after.translation {
        let _ = writeln!(s, "<h2 id=\"new-errors\">New errors</h2>\n<pre>{}</pre>", escape(e));
    }

    // a table of contents: each upstream file and the number of its hunks
    s.push_str("<h2 id=\"upstream\">Per upstream file</h2>\n<ul>\n");
    for f in &review.upstream {
        let _ = writeln!(s, "<li><a href=\"#{}\">{}</a> ({} hunks)</li>", file_anchor(&f.path), escape(&f.path), f.hunks.len());
    }
    s.push_str("</ul>\n");
    for f in &review.upstream {
        let _ = writeln!(s, "<details id=\"{}\"><summary>{} ({} hunks)</summary>", file_anchor(&f.path), escape(&f.path), f.hunks.len());
        for (i, h) in f.hunks.iter().enumerate() {
            let id = anchor(&f.path, i);
            let _ = writeln!(
                s,
                "<section class=\"pair\" id=\"{id}\"><div><div class=\"meta\"><a href=\"#{id}\">hunk {}</a>, lines {} → {}</div>{}</div><div>",
                i + 1,
                lines(&h.old),
                lines(&h.new),
                diff_block(&h.text)
            );
            let produced: Vec<&GeneratedHunk> = review.paired_to(&f.path, i).collect();
            if produced.is_empty() {
                s.push_str("<div class=\"meta\">produced no generated change</div>");
            }
            for g in produced {
                generated_hunk(&mut s, g);
            }
            s.push_str("</div></section>\n");
        }
        let reformed: Vec<&GeneratedHunk> = review.generated.iter().filter(|g| matches!(&g.cause, Cause::WholeFile { input, .. } if *input == f.path)).collect();
        if let Some(first) = reformed.first() {
            let _ = writeln!(s, "<div class=\"meta\">generated/{} changed form (printed by the translator / copied as upstream wrote it): its {} hunks follow from the hunks above</div>", escape(&first.path), reformed.len());
            for g in reformed {
                generated_hunk(&mut s, g);
            }
        }
        s.push_str("</details>\n");
    }

    s.push_str("<h2 id=\"unexplained\">Generated hunks no upstream hunk explains</h2>\n");
    let unexplained: Vec<&GeneratedHunk> = review.unexplained().collect();
    if unexplained.is_empty() {
        s.push_str("<p>None: every generated change comes from an upstream change (or is a file's provenance line).</p>\n");
    }
    for g in unexplained {
        generated_hunk(&mut s, g);
    }
    let _ = write!(s, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    s
}

fn generated_hunk(s: &mut String, g: &GeneratedHunk) {
    let _ = write!(
        s,
        "<div class=\"meta\">generated/{} lines {} → {}{}</div>{}",
        escape(&g.path),
        lines(&g.hunk.old),
        lines(&g.hunk.new),
        escape(&rules_text(&g.rules)),
        diff_block(&g.hunk.text)
    );
}

fn diff_block(text: &str) -> String {
    let mut out = String::from("<pre>");
    for line in text.lines() {
        let class = if line.starts_with('-') { "del" } else { "add" };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(line));
    }
    out.push_str("</pre>");
    out
}

fn file_anchor(path: &str) -> String {
    format!("f-{}", path_slug(path))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
