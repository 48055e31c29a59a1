//! The claims check's own tests: each predicate on a folder made here, a
//! changed number or a rerun flipping an outcome and failing `--verify`,
//! a superseded pin refused, a quote not in the paper refused.

use super::eval::{judge, Cache, Outcome};
use super::report::{self, Paths, BEGIN, END};
use super::*;
use std::fs;

const HEADER: &str = "point,scheduler,rep,seed,status,mean_jct_s\n";

/// results/<spec>/<stamp>/runs.csv with (point, scheduler, seed, value) rows.
fn folder(root: &Path, spec: &str, stamp: &str, rows: &[(&str, &str, u32, f64)]) -> PathBuf {
    let d = root.join("results").join(spec).join(stamp);
    fs::create_dir_all(&d).unwrap();
    let mut s = String::from(HEADER);
    for (i, (p, sch, seed, v)) in rows.iter().enumerate() {
        s += &format!("{p},{sch},{i},{seed},ok,{v}\n");
    }
    fs::write(d.join("runs.csv"), s).unwrap();
    fs::write(d.join("meta.json"), r#"{"git_dirty": false}"#).unwrap();
    d
}

fn claims_file(extra: &str) -> String {
    format!(
        r#"paper = "P"
text = "p.txt"
[[figure]]
name = "Fig 1"
[[claim]]
id = "c1"
figure = "Fig 1"
short = "A faster than B"
quote = "A is faster than B"
at = "Section 1"
paper_value = "A below B"
spec = "s"
metric = "mean_jct_s"
kind = "less"
a = "A"
b = "B"
{extra}"#
    )
}

fn setup(extra: &str, a: [f64; 3], b: [f64; 3]) -> (tempfile::TempDir, Paths) {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let rows: Vec<(&str, &str, u32, f64)> = (0..3)
        .flat_map(|i| [("p", "A", i as u32, a[i]), ("p", "B", i as u32, b[i])])
        .collect();
    folder(r, "s", "20260101-000000", &rows);
    fs::create_dir_all(r.join("claims")).unwrap();
    fs::write(r.join("claims/p.toml"), claims_file(extra)).unwrap();
    fs::create_dir_all(r.join("papers")).unwrap();
    fs::write(
        r.join("papers/p.txt"),
        "Intro.\nWe see that A is fast-\ner than B, clearly.\n",
    )
    .unwrap();
    fs::write(r.join("EXP.md"), format!("# E\n\n{BEGIN}\n{END}\n\nrest\n")).unwrap();
    let paths = Paths {
        claims: r.join("claims"),
        results: r.join("results"),
        papers: r.join("papers"),
        experiments: r.join("EXP.md"),
        page: r.join("claims.md"),
    };
    (t, paths)
}

#[test]
fn an_ordering_holds_only_when_the_paired_interval_is_on_its_side() {
    // Paired differences -2, -2.1, -1.9: far below 0, though the two
    // samples' ranges overlap when unpaired.
    let (_t, paths) = setup("", [10.0, 12.0, 14.0], [12.0, 14.1, 15.9]);
    let c = report::check(&paths).unwrap();
    assert_eq!(c.papers[0].1[0].outcome, Outcome::Holds);
    // A tie: no difference shown, so it does not hold.
    let (_t, paths) = setup("", [10.0, 12.0, 14.0], [10.5, 11.5, 14.2]);
    let r = &report::check(&paths).unwrap().papers[0].1[0];
    assert_eq!(r.outcome, Outcome::Fails);
    assert!(r.why.contains("no difference shown"), "{}", r.why);
    // The opposite.
    let (_t, paths) = setup("", [20.0, 22.0, 24.0], [10.0, 12.0, 14.0]);
    let r = &report::check(&paths).unwrap().papers[0].1[0];
    assert!(r.why.contains("the opposite holds"), "{}", r.why);
}

#[test]
fn a_changed_number_flips_the_outcome_and_verify_fails_until_written() {
    let (t, paths) = setup("", [10.0, 12.0, 14.0], [12.0, 14.1, 15.9]);
    let c = report::check(&paths).unwrap();
    assert!(!report::write(&paths, &c, false).unwrap().is_empty());
    assert!(
        report::write(&paths, &c, true).unwrap().is_empty(),
        "written, then verified"
    );
    let exp = fs::read_to_string(&paths.experiments).unwrap();
    assert!(
        exp.contains("| P | Fig 1 | reproduced | 1 of 1 hold | - | - |"),
        "{exp}"
    );
    assert!(
        exp.ends_with("\n\nrest\n"),
        "text after the markers is kept"
    );
    // A rerun whose B is now as fast as A: the outcome moves.
    folder(
        t.path(),
        "s",
        "20260102-000000",
        &[
            ("p", "A", 0, 10.0),
            ("p", "B", 0, 10.0),
            ("p", "A", 1, 12.0),
            ("p", "B", 1, 11.9),
        ],
    );
    let c = report::check(&paths).unwrap();
    assert_eq!(c.papers[0].1[0].outcome, Outcome::Fails);
    assert_eq!(
        c.papers[0].1[0].folder.as_deref(),
        Some("s/20260102-000000")
    );
    let differ = report::write(&paths, &c, true).unwrap();
    assert_eq!(differ.len(), 2, "{differ:?}");
    assert!(differ[0].contains("not reproduced"), "{differ:?}");
}

#[test]
fn a_changed_number_alone_fails_verify() {
    let (t, paths) = setup("", [10.0, 12.0, 14.0], [12.0, 14.1, 15.9]);
    report::write(&paths, &report::check(&paths).unwrap(), false).unwrap();
    // The same outcome, one number different: the page differs.
    let csv = t.path().join("results/s/20260101-000000/runs.csv");
    let text = fs::read_to_string(&csv)
        .unwrap()
        .replace(",15.9\n", ",16.9\n");
    fs::write(&csv, text).unwrap();
    let c = report::check(&paths).unwrap();
    assert_eq!(c.papers[0].1[0].outcome, Outcome::Holds);
    let differ = report::write(&paths, &c, true).unwrap();
    assert_eq!(differ.len(), 1, "only docs/claims.md moves: {differ:?}");
}

#[test]
fn a_superseded_pin_needs_a_reason_and_an_interrupted_folder_is_skipped() {
    let pin = "folder = \"20260101-000000\"\n";
    let (t, paths) = setup(pin, [10.0, 12.0, 14.0], [12.0, 14.1, 15.9]);
    // The pin is the newest: fine.
    assert!(report::check(&paths).is_ok());
    folder(
        t.path(),
        "s",
        "20260105-000000",
        &[("p", "A", 0, 1.0), ("p", "B", 0, 2.0)],
    );
    let e = format!("{:#}", report::check(&paths).err().unwrap());
    assert!(e.contains("is newer") && e.contains("pin_why"), "{e}");
    let with_why = claims_file(&format!("{pin}pin_why = \"the rerun changed the data\"\n"));
    fs::write(paths.claims.join("p.toml"), with_why).unwrap();
    let c = report::check(&paths).unwrap();
    assert_eq!(
        c.papers[0].1[0].folder.as_deref(),
        Some("s/20260101-000000")
    );
    // Without a pin: the newest complete folder, not an interrupted one.
    let newest = folder(t.path(), "s", "20260109-000000", &[("p", "A", 0, 1.0)]);
    fs::write(newest.join("meta.json"), r#"{"interrupted": "SIGINT"}"#).unwrap();
    let n = newest_folder(&t.path().join("results/s")).unwrap().unwrap();
    assert!(n.ends_with("20260105-000000"), "{}", n.display());
}

#[test]
fn a_quote_must_be_in_the_paper() {
    let (_t, paths) = setup("", [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]);
    // Found across the hyphenated line break.
    assert!(report::check(&paths).is_ok());
    let f = claims_file("").replace("A is faster than B", "A is much faster than B");
    fs::write(paths.claims.join("p.toml"), f).unwrap();
    let e = format!("{:#}", report::check(&paths).err().unwrap());
    assert!(e.contains("its quote is not in"), "{e}");
    // A quoted sentence (a paper figure a page quotes) is checked the same way.
    let quoted = |q: &str| {
        format!(
            "{}\n[[quoted]]\nquote = \"{q}\"\nat = \"Section 1\"\n",
            claims_file("")
        )
    };
    fs::write(paths.claims.join("p.toml"), quoted("We see that A")).unwrap();
    assert!(report::check(&paths).is_ok());
    fs::write(paths.claims.join("p.toml"), quoted("We see that C")).unwrap();
    let e = format!("{:#}", report::check(&paths).err().unwrap());
    assert!(
        e.contains("the quoted sentence at \"Section 1\" is not in"),
        "{e}"
    );
}

#[test]
fn bad_claims_are_refused_by_name() {
    let (_t, paths) = setup("", [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]);
    for (text, want) in [
        (claims_file("colour = 3"), "colour"),
        (claims_file("").replace("b = \"B\"", ""), "give `b`"),
        (claims_file("value = 2"), "takes no `value`"),
        (
            claims_file("").replace("kind = \"less\"", "kind = \"ratio\""),
            "needs `value`",
        ),
        (
            claims_file("").replace("figure = \"Fig 1\"\nshort", "figure = \"Fig 2\"\nshort"),
            "Fig 2",
        ),
        (claims_file("points = [\"nowhere\"]"), "not in"),
        (
            claims_file("").replace("metric = \"mean_jct_s\"", "metric = \"jct\""),
            "no column \"jct\"",
        ),
    ] {
        fs::write(paths.claims.join("p.toml"), text).unwrap();
        let e = format!("{:#}", report::check(&paths).err().unwrap());
        assert!(e.contains(want), "want {want:?} in {e}");
    }
}

#[test]
fn ratios_thresholds_and_trends() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    folder(
        r,
        "s",
        "20260101-000000",
        &[
            ("p1", "A", 1, 4.0),
            ("p1", "B", 1, 1.0),
            ("p1", "A", 2, 4.4),
            ("p1", "B", 2, 1.1),
            ("p2", "A", 1, 16.0),
            ("p2", "A", 2, 16.5),
        ],
    );
    let base = claims_file("").replace("kind = \"less\"\na = \"A\"\nb = \"B\"\n", "");
    let claim = |extra: &str| -> Claim {
        let f: ClaimsFile = toml::from_str(&format!("{base}{extra}")).unwrap();
        f.validate().unwrap();
        f.claims.into_iter().next().unwrap()
    };
    let results = r.join("results");
    let mut cache = Cache::default();
    let mut outcome = |extra: &str| judge(&claim(extra), &results, &mut cache).unwrap().outcome;
    let pts = "points = [\"p1\"]\n";
    assert_eq!(
        outcome(&format!(
            "{pts}kind = \"ratio\"\na = \"A\"\nb = \"B\"\nvalue = 4\ntol = 0.05"
        )),
        Outcome::Holds
    );
    assert_eq!(
        outcome(&format!(
            "{pts}kind = \"ratio\"\na = \"A\"\nb = \"B\"\nvalue = 3\ntol = 0.1"
        )),
        Outcome::Fails
    );
    assert_eq!(
        outcome(&format!("{pts}kind = \"at-most\"\na = \"A\"\nvalue = 5")),
        Outcome::Holds
    );
    assert_eq!(
        outcome(&format!("{pts}kind = \"at-least\"\na = \"A\"\nvalue = 5")),
        Outcome::Fails
    );
    assert_eq!(
        outcome("kind = \"rises\"\na = \"A\"\npoints = [\"p1\", \"p2\"]"),
        Outcome::Holds
    );
    assert_eq!(
        outcome("kind = \"falls\"\na = \"A\"\npoints = [\"p1\", \"p2\"]"),
        Outcome::Fails
    );
    assert_eq!(
        outcome("kind = \"rises\"\nseries = [\"B\", \"A\"]\npoints = [\"p1\"]"),
        Outcome::Holds
    );
    // B never ran at p2: cannot be judged there.
    assert_eq!(
        outcome("kind = \"less\"\na = \"B\"\nb = \"A\"\npoints = [\"p2\"]"),
        Outcome::Unjudged
    );
    // A layout against another: B at p1 against A at p2, paired by seed.
    assert_eq!(
        outcome("kind = \"less\"\na = \"B\"\nb = \"A@p2\"\npoints = [\"p1\"]"),
        Outcome::Holds
    );
}

#[test]
fn job_shares_count_refused_jobs_as_missed_and_means_leave_them_out() {
    let t = tempfile::tempdir().unwrap();
    let d = folder(
        t.path(),
        "s",
        "20260101-000000",
        &[("p", "A", 0, 1.0), ("p", "B", 0, 1.0)],
    );
    fs::write(
        d.join("jobs.csv"),
        "point,scheduler,rep,state,jct_s,deadline_met,cost_total\n\
         p,A,0,succeeded,5,true,2\np,A,0,succeeded,9,false,4\n\
         p,B,0,succeeded,5,true,3\np,B,0,refused,,false,0\n",
    )
    .unwrap();
    let table = data::Table::read(&d, "jobs").unwrap();
    let get = |v: &data::Values, s: &str| v[&("p".to_string(), s.to_string())]["0"];
    let met = table
        .job_values("deadline_met", "share", None, "jobs")
        .unwrap();
    assert_eq!((get(&met, "A"), get(&met, "B")), (50.0, 50.0));
    let le = table
        .job_values("jct_s", "share", Some(6.0), "jobs")
        .unwrap();
    assert_eq!((get(&le, "A"), get(&le, "B")), (50.0, 50.0));
    let cost = table
        .job_values("cost_total", "mean", None, "jobs")
        .unwrap();
    assert_eq!(
        (get(&cost, "A"), get(&cost, "B")),
        (3.0, 3.0),
        "the refused job's 0 left out"
    );
}

#[test]
fn verdicts_from_outcomes() {
    use Outcome::*;
    assert_eq!(report::verdict(&[Holds, Holds]), "reproduced");
    assert_eq!(report::verdict(&[Holds, Fails]), "partial");
    assert_eq!(report::verdict(&[Fails, Unjudged]), "not reproduced");
    assert_eq!(report::verdict(&[Unjudged]), "not judged");
    assert_eq!(report::verdict(&[Holds, Unjudged]), "reproduced");
}
