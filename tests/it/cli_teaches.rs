//! The command line teaches: bare `ratelab` is its help, `list` tells the
//! truth about every kind, `list --models` lists every limiter model from
//! the model table, and `--help` names every family.

use crate::common::*;

#[test]
fn bare_ratelab_prints_the_help_as_help_does() {
    let bare = ratelab(&[]);
    let help = ratelab(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert_eq!(bare.status.code(), Some(0), "{}", stderr(&bare));
    assert_eq!(stdout(&bare), stdout(&help));
    assert!(stdout(&bare).lines().count() > 20, "{}", stdout(&bare));
}

#[test]
fn help_names_every_family() {
    let help = stdout(&ratelab(&["--help"]));
    let opening = help.split("\n\n").take(2).collect::<Vec<_>>().join(" ");
    for family in [
        "pingora-limits",
        "tower",
        "uber-go",
        "golang.org/x/time/rate",
        "governor",
        "nginx",
        "Envoy",
        "Guava",
        "Cloudflare",
        "Redis",
        "GCRA",
        "exec",
    ] {
        assert!(opening.contains(family), "{family} missing from: {opening}");
    }
}

#[test]
fn list_models_prints_every_model_with_its_parameters() {
    let o = ratelab(&["list", "--models"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    for r in ratelab::lab::decision::MODELS {
        assert!(
            text.contains(&format!("\n{}\n    {}\n", r.model, r.summary)),
            "{}",
            r.model
        );
        for p in r.params {
            assert!(
                text.contains(&format!("    {:<18} ", p.name)) && text.contains(p.doc),
                "{}.{}",
                r.model,
                p.name
            );
        }
    }
    assert!(
        text.contains("whole number 1..=") && text.contains("one of continuous, timer"),
        "{text}"
    );
}

#[test]
fn list_describes_the_decision_lab_as_it_is() {
    let text = stdout(&ratelab(&["list"]));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("decision_accuracy "))
        .unwrap();
    assert!(
        line.contains("any limiter models") && line.contains("list --models"),
        "{line}"
    );
    assert!(line.contains("nginx") && line.contains("exec"), "{line}");
}

/// Guava's `acquire` through `replay --algo limiter`: every row admitted,
/// the second at t = 0 after the half second it pre-paid.
#[test]
fn replay_calls_guava_acquire() {
    let (_d, trace) = temp_file("t.csv", b"t_ns,key\n0,a\n0,a\n0,b\n");
    let out = trace.with_file_name("o.csv");
    let o = ratelab(&[
        "replay",
        "--algo",
        "limiter",
        "--limit",
        "2",
        "--interval-ms",
        "1000",
        "--limiter",
        r#"{"model": "guava_smooth_bursty", "call": "acquire"}"#,
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "t_ns,key,allowed,delay_ns\n0,a,true,0\n0,a,true,500000000\n0,b,true,0\n"
    );
}
