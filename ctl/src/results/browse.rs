//! The results browser: static pages written into the results tree, so a
//! folder can be opened from disk or shared as it is (`master results
//! index`). `<results>/index.html` lists every folder with its spec,
//! commit, date, runs, host CPU and the claims judged on it;
//! `<folder>/index.html` shows one folder: its provenance, summary,
//! plots and timelines (each with its decision record when the run kept
//! one), its runs and jobs filtered by point, scheduler and seed, and any
//! two schedulers of a point side by side (the JCT distributions, the
//! locality and the paired difference of the mean JCT over seeds with its
//! Student's t 95% interval). The data travel inside the page as JSON; the
//! drawing is `browse.js`.

use super::table::Table;
use super::ResultsDir;
use anyhow::Context;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `master results ...`.
#[derive(clap::Subcommand)]
pub enum ResultsCmd {
    /// Write the results browser: `<results>/index.html` and one
    /// `index.html` in every results folder (static files, no server).
    #[command(
        after_help = "Examples:\n  master results index\n  master results index --results /tmp/results --claims experiments/claims\n  chromium results/index.html"
    )]
    Index {
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// The claims whose outcomes the pages show per folder (skipped,
        /// saying so, when the directory is absent).
        #[arg(long, default_value = "experiments/claims")]
        claims: PathBuf,
    },
    /// Write the pages as `index` does, then serve the results tree over
    /// HTTP until interrupted (folders added later need another `index`).
    #[command(
        after_help = "Examples:\n  master results serve\n  master results serve --listen 127.0.0.1:0 --results /tmp/results"
    )]
    Serve {
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// As for `index`.
        #[arg(long, default_value = "experiments/claims")]
        claims: PathBuf,
        /// Where to listen; port 0 takes a free one (the address is
        /// printed). Anyone who reaches it reads every folder, so the
        /// default is loopback.
        #[arg(long, default_value = "127.0.0.1:8088")]
        listen: std::net::SocketAddr,
    },
}

/// `<spec>/<stamp>` -> (paper, claim id, outcome) of every claim judged on
/// it (the claims check fills it; see `master results index`).
pub type Verdicts = BTreeMap<String, Vec<(String, String, String)>>;

/// One results folder as the pages show it.
pub struct Folder {
    pub spec: String,
    pub stamp: String,
    pub dir: PathBuf,
    pub meta: Value,
    pub runs: Option<Table>,
    pub jobs: Option<Table>,
}

impl Folder {
    fn key(&self) -> String {
        format!("{}/{}", self.spec, self.stamp)
    }
}

/// Every `<results>/<spec>/<stamp>/` with a meta.json, by spec then stamp.
pub fn folders(results: &Path) -> anyhow::Result<Vec<Folder>> {
    let mut out = Vec::new();
    for spec in sorted_dirs(results)? {
        for stamp in sorted_dirs(&spec)? {
            if !stamp.join("meta.json").is_file() {
                continue;
            }
            let meta = ResultsDir::open(&stamp).read_meta()?;
            out.push(Folder {
                spec: name_of(&spec),
                stamp: name_of(&stamp),
                runs: Table::read(&stamp, "runs").ok(),
                jobs: Table::read(&stamp, "jobs").ok(),
                dir: stamp,
                meta,
            });
        }
    }
    Ok(out)
}

fn sorted_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Writes every folder's page and the index; the paths written, the index
/// first.
pub fn write_all(results: &Path, verdicts: &Verdicts) -> anyhow::Result<Vec<PathBuf>> {
    let all = folders(results)?;
    let index = results.join("index.html");
    write_whole(&index, &index_page(&all, verdicts))?;
    let mut written = vec![index];
    for f in &all {
        let empty = Vec::new();
        let page = folder_page(f, verdicts.get(&f.key()).unwrap_or(&empty))?;
        let path = f.dir.join("index.html");
        write_whole(&path, &page)?;
        written.push(path);
    }
    Ok(written)
}

fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `2026-11-24 17:38` from a stamp `20261124-173842`.
fn date_of(stamp: &str) -> String {
    match (stamp.get(0..4), stamp.get(4..6), stamp.get(6..8)) {
        (Some(y), Some(m), Some(d)) if stamp.len() >= 13 => {
            format!("{y}-{m}-{d} {}:{}", &stamp[9..11], &stamp[11..13])
        }
        _ => stamp.to_owned(),
    }
}

/// The commit a folder was made at (meta.json's `git_commit`, or its
/// provenance's), shortened, and whether the tree was dirty.
fn commit_of(meta: &Value) -> (String, Option<bool>) {
    let p = meta.get("provenance").unwrap_or(meta);
    let commit = p["git_commit"].as_str().unwrap_or("");
    (commit.chars().take(7).collect(), p["git_dirty"].as_bool())
}

/// min-max of the runs' host CPU, when runs.csv has the column.
fn host_cpu(runs: Option<&Table>) -> String {
    let Some(t) = runs else { return String::new() };
    let Some(i) = t.header.iter().position(|h| h == "host_cpu_pct") else {
        return String::new();
    };
    let v: Vec<f64> = t.rows.iter().filter_map(|r| r[i].parse().ok()).collect();
    if v.is_empty() {
        return String::new();
    }
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.0}-{hi:.0}%")
}

fn claims_cell(v: &[(String, String, String)]) -> String {
    if v.is_empty() {
        return String::new();
    }
    let holds = v.iter().filter(|c| c.2 == "holds").count();
    let title: Vec<String> = v
        .iter()
        .map(|c| format!("{} {}: {}", c.0, c.1, c.2))
        .collect();
    format!(
        "<span title=\"{}\">{holds} of {} hold</span>",
        esc(&title.join("\n")),
        v.len()
    )
}

fn index_page(all: &[Folder], verdicts: &Verdicts) -> String {
    let mut rows = String::new();
    for f in all {
        let (commit, dirty) = commit_of(&f.meta);
        let runs = f.runs.as_ref().map_or(0, |t| t.rows.len());
        let failed = f.runs.as_ref().map_or(0, |t| {
            let s = t.header.iter().position(|h| h == "status");
            s.map_or(0, |i| t.rows.iter().filter(|r| r[i] != "ok").count())
        });
        let empty = Vec::new();
        rows += &format!(
            "<tr data-spec=\"{spec}\"><td>{spec}</td><td><a href=\"{spec}/{stamp}/index.html\">{stamp}</a></td><td>{date}</td><td>{commit}{dirty}</td><td>{runs}</td><td>{failed}</td><td>{cpu}</td><td>{claims}</td></tr>\n",
            spec = esc(&f.spec),
            stamp = esc(&f.stamp),
            date = date_of(&f.stamp),
            commit = esc(&commit),
            dirty = if dirty == Some(true) { " (dirty)" } else { "" },
            cpu = host_cpu(f.runs.as_ref()),
            claims = claims_cell(verdicts.get(&f.key()).unwrap_or(&empty)),
        );
    }
    page(
        "Results",
        &format!(
            "<h1>Results</h1>\n<p>{} folders. <input id=\"filter\" placeholder=\"filter by spec\"></p>\n<table id=\"folders\"><thead><tr><th>spec</th><th>folder</th><th>date (UTC)</th><th>commit</th><th>runs</th><th>failed</th><th>host CPU</th><th>claims</th></tr></thead><tbody>\n{rows}</tbody></table>\n<script>{}</script>\n",
            all.len(),
            INDEX_JS
        ),
    )
}

const INDEX_JS: &str = "document.getElementById('filter').addEventListener('input', e => { for (const tr of document.querySelectorAll('#folders tbody tr')) tr.hidden = !tr.dataset.spec.includes(e.target.value); });";

/// The files of `dir/sub` ending in one of `exts`, sorted.
fn files_in(dir: &Path, sub: &str, exts: &[&str]) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| exts.iter().any(|x| n.ends_with(x)))
        .collect();
    v.sort();
    v
}

/// A table as JSON for the page: `{"header": [...], "rows": [[...]]}`.
fn table_json(t: Option<&Table>) -> Value {
    match t {
        Some(t) => json!({ "header": t.header, "rows": t.rows }),
        None => json!({ "header": [], "rows": [] }),
    }
}

fn folder_page(f: &Folder, claims: &[(String, String, String)]) -> anyhow::Result<String> {
    let (commit, dirty) = commit_of(&f.meta);
    let summary = std::fs::read_to_string(f.dir.join("summary.md")).unwrap_or_default();
    let plots: String = files_in(&f.dir, "plots", &[".png", ".svg"])
        .iter()
        .map(|p| format!("<figure><img src=\"plots/{0}\" alt=\"{0}\"><figcaption>{0}</figcaption></figure>\n", esc(p)))
        .collect();
    let records = files_in(&f.dir, "decisions", &[".csv.gz"]);
    let timelines: String = files_in(&f.dir, "timelines", &[".png", ".svg"])
        .iter()
        .map(|t| {
            let stem = t.rsplit_once('.').map_or(t.as_str(), |(s, _)| s);
            let rec = format!("{stem}.csv.gz");
            let link = if records.contains(&rec) {
                format!(
                    " (<a class=\"record\" href=\"decisions/{0}\">decision record</a>)",
                    esc(&rec)
                )
            } else {
                String::new()
            };
            format!(
                "<li><a class=\"timeline\" href=\"timelines/{0}\">{0}</a>{link}</li>\n",
                esc(t)
            )
        })
        .collect();
    let claims_html: String = claims
        .iter()
        .map(|c| format!("<li>{} {}: <b>{}</b></li>", esc(&c.0), esc(&c.1), esc(&c.2)))
        .collect();
    let data = json!({ "runs": table_json(f.runs.as_ref()), "jobs": table_json(f.jobs.as_ref()) });
    // Inside <script>: no "</" may end it early.
    let data = serde_json::to_string(&data)?.replace("</", "<\\/");
    let body = format!(
        "<p><a href=\"../../index.html\">all results</a></p>\n<h1>{spec} / {stamp}</h1>\n<p>date {date} UTC, commit {commit}{dirty}, command <code>{command}</code></p>\n{claims}\n<section id=\"side\"><h2>Side by side</h2><p><select id=\"sb-point\"></select> <select id=\"sb-a\"></select> against <select id=\"sb-b\"></select></p><div id=\"sb-out\"></div></section>\n<section><h2>Runs</h2><p>point <select id=\"f-point\"></select> scheduler <select id=\"f-sched\"></select> seed <select id=\"f-seed\"></select></p><table id=\"runs\"></table></section>\n<section><h2>Jobs</h2><table id=\"jobs\"></table></section>\n<section><h2>Plots</h2>{plots}</section>\n<section><h2>Timelines</h2><ul>{timelines}</ul></section>\n<section id=\"summary\"><h2>summary.md</h2>{summary}</section>\n<script id=\"data\" type=\"application/json\">{data}</script>\n<script>{js}</script>\n",
        spec = esc(&f.spec),
        stamp = esc(&f.stamp),
        date = date_of(&f.stamp),
        commit = esc(&commit),
        dirty = if dirty == Some(true) { " (dirty tree)" } else { "" },
        command = esc(f.meta["command"].as_str().unwrap_or("")),
        claims = if claims_html.is_empty() {
            String::new()
        } else {
            format!("<h2>Claims judged on this folder</h2><ul id=\"claims\">{claims_html}</ul>")
        },
        summary = md_to_html(&summary),
        js = BROWSE_JS,
    );
    Ok(page(&format!("{} / {}", f.spec, f.stamp), &body))
}

const BROWSE_JS: &str = include_str!("browse.js");

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        esc(title)
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:90em}table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}figure{display:inline-block;margin:0.5em}img{max-width:40em}svg{border:1px solid #ddd;margin:0.3em}.none{color:#a00}";

/// A summary's markdown as HTML: headings, tables, lists and paragraphs
/// (inline code kept, nothing else interpreted).
pub fn md_to_html(md: &str) -> String {
    let mut out = String::new();
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut para: Vec<String> = Vec::new();
    let flush_para = |para: &mut Vec<String>, out: &mut String| {
        if !para.is_empty() {
            *out += &format!("<p>{}</p>\n", inline(&para.join(" ")));
            para.clear();
        }
    };
    for line in md.lines().chain(std::iter::once("")) {
        let t = line.trim();
        if t.starts_with('|') {
            flush_para(&mut para, &mut out);
            let cells: Vec<String> = t
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect();
            if !cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
            {
                table.push(cells);
            }
            continue;
        }
        if !table.is_empty() {
            out += &html_table(&table);
            table.clear();
        }
        if let Some(h) = t.strip_prefix('#') {
            flush_para(&mut para, &mut out);
            let level = 2 + h.chars().take_while(|&c| c == '#').count().min(3);
            out += &format!(
                "<h{level}>{}</h{level}>\n",
                inline(h.trim_start_matches('#').trim())
            );
        } else if t.is_empty() {
            flush_para(&mut para, &mut out);
        } else if let Some(item) = t.strip_prefix("- ") {
            flush_para(&mut para, &mut out);
            out += &format!("<p>&bull; {}</p>\n", inline(item));
        } else {
            para.push(t.to_owned());
        }
    }
    out
}

fn html_table(rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table>");
    for (i, r) in rows.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        s += "<tr>";
        for c in r {
            s += &format!("<{tag}>{}</{tag}>", inline(c));
        }
        s += "</tr>";
    }
    s + "</table>\n"
}

/// Escapes text and keeps `code` spans.
fn inline(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            out += &format!("<code>{}</code>", esc(part));
        } else {
            out += &esc(part);
        }
    }
    out
}

#[cfg(test)]
mod tests;
