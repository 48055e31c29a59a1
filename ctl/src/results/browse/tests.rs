//! The results browser's pages from a results tree made here.

use super::*;
use std::fs;

fn folder(root: &Path, spec: &str, stamp: &str, commit: &str) -> PathBuf {
    let d = root.join(spec).join(stamp);
    fs::create_dir_all(d.join("plots")).unwrap();
    fs::create_dir_all(d.join("timelines")).unwrap();
    fs::create_dir_all(d.join("decisions")).unwrap();
    fs::write(
        d.join("meta.json"),
        format!(r#"{{"git_commit": "{commit}", "git_dirty": false, "command": "master experiment x.toml"}}"#),
    )
    .unwrap();
    fs::write(
        d.join("runs.csv"),
        "point,scheduler,rep,seed,status,mean_jct_s,locality_pct,host_cpu_pct\np,A,0,1,ok,2.0,100,9\np,B,0,1,ok,3.0,50,12\np,A,1,2,ok,2.5,100,8\np,B,1,2,failed,NaN,NaN,30\n",
    )
    .unwrap();
    fs::write(
        d.join("jobs.csv"),
        "point,scheduler,rep,job,state,jct_s\np,A,0,job-1,succeeded,1.5\np,B,0,job-1,succeeded,2.5\n",
    )
    .unwrap();
    fs::write(
        d.join("summary.md"),
        "# x\n\nA `code` <b>.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    )
    .unwrap();
    fs::write(d.join("plots/mean_jct.png"), b"png").unwrap();
    fs::write(d.join("timelines/p-A-r0.png"), b"png").unwrap();
    fs::write(d.join("decisions/p-A-r0.csv.gz"), b"gz").unwrap();
    d
}

#[test]
fn the_index_lists_every_folder_and_each_folder_gets_its_page() {
    let t = tempfile::tempdir().unwrap();
    let one = folder(t.path(), "spec-a", "20260101-120000", "abcdef0123");
    folder(t.path(), "spec-b", "20260102-130500", "1234567890");
    fs::create_dir_all(t.path().join("spec-b/20260103-000000")).unwrap(); // no meta.json: skipped
    let mut v = Verdicts::new();
    v.insert(
        "spec-a/20260101-120000".into(),
        vec![
            ("P".into(), "c1".into(), "holds".into()),
            ("P".into(), "c2".into(), "does not hold".into()),
        ],
    );
    let written = write_all(t.path(), &v).unwrap();
    assert_eq!(written.len(), 3, "{written:?}");
    let index = fs::read_to_string(t.path().join("index.html")).unwrap();
    assert!(index.contains("href=\"spec-a/20260101-120000/index.html\""));
    assert!(index.contains("2026-01-02 13:05") && index.contains("abcdef0"));
    assert!(index.contains("8-30%"), "host CPU min-max: {index}");
    assert!(index.contains("1 of 2 hold"));
    assert!(!index.contains("20260103-000000"));
    let page = fs::read_to_string(one.join("index.html")).unwrap();
    assert!(page.contains("src=\"plots/mean_jct.png\""));
    assert!(
        page.contains("href=\"decisions/p-A-r0.csv.gz\""),
        "the timeline's decision record"
    );
    assert!(
        page.contains("<code>code</code> &lt;b&gt;."),
        "summary escaped, code kept"
    );
    assert!(page.contains("<th>a</th><th>b</th></tr><tr><td>1</td>"));
    assert!(page.contains("c2: <b>does not hold</b>"));
    // The data ride in the page as JSON a browser parses.
    let start = page.find("application/json\">").unwrap() + "application/json\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&page[start..end].replace("<\\/", "</")).unwrap();
    assert_eq!(data["runs"]["rows"].as_array().unwrap().len(), 4);
    assert_eq!(data["jobs"]["header"][5], "jct_s");
    // No temporary file is left beside a page.
    assert!(!one.join("index.html.tmp").exists());
}

#[test]
fn a_script_end_in_the_data_cannot_close_the_page_script() {
    let t = tempfile::tempdir().unwrap();
    let d = folder(t.path(), "s", "20260101-000000", "abc");
    fs::write(
        d.join("jobs.csv"),
        "point,scheduler,rep,job\np,A,0,</script><script>alert(1)\n",
    )
    .unwrap();
    write_all(t.path(), &Verdicts::new()).unwrap();
    let page = fs::read_to_string(d.join("index.html")).unwrap();
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "only the page's own scripts end"
    );
}

#[test]
fn markdown_headings_lists_and_escapes() {
    let h = md_to_html("## Title\n- an item with `x<y`\nplain & text\nmore\n");
    assert!(h.contains("<h3>Title</h3>"), "{h}");
    assert!(h.contains("&bull; an item with <code>x&lt;y</code>"));
    assert!(h.contains("<p>plain &amp; text more</p>"));
    assert_eq!(esc("<\"&>"), "&lt;&quot;&amp;&gt;");
}
