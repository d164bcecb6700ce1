//! Signal handlers that interrupt the guard's decisions (which run on the guard's own stack,
//! with every signal blocked): a handler that forks and decides in the child must not disturb
//! the decision it interrupted, and one that siglongjmps out of an exec hook must leave nothing
//! behind. Measured on the library as it ships (release), like the stack it decides on.

mod support;

use execguard_testkit::identities;
use support::*;

const ITERATIONS: &str = "100000";

fn signals_program() -> std::path::PathBuf {
    compile(&support_dir(), "signals.c", "signals", &[])
}

fn run_mode(f: &Fixture, who: &execguard_testkit::Identity, mode: &str) -> Outcome {
    let mut cmd = f.guarded(&f.policy("strict", "seal = true\n"), signals_program());
    cmd.env("LD_PRELOAD", release_lib())
        .arg(mode)
        .arg(&f.payload)
        .arg(ITERATIONS);
    run(who.apply(&mut cmd))
}

#[test]
fn a_handler_that_forks_mid_decision_leaves_the_refusal_standing() {
    for who in identities() {
        let f = Fixture::new("signals-fork");
        f.for_identity(&who);
        let o = run_mode(&f, &who, "fork");
        assert_eq!(o.code, Some(0), "{}\n{o}", who.label());
        let (good, bad) = (o.probe_number("good"), o.probe_number("bad"));
        // Each child resumes the interrupted execve of the payload, which must be refused.
        assert_eq!(bad, 0, "{}: {bad} children went wrong\n{o}", who.label());
        assert!(
            good >= 20,
            "{}: too few signals to tell ({good})\n{o}",
            who.label()
        );
        assert!(!o.ran(), "{}: the payload ran\n{o}", who.label());
    }
}

#[test]
fn siglongjmp_out_of_a_decision_leaves_no_mapping_behind() {
    for who in identities() {
        let f = Fixture::new("signals-longjmp");
        f.for_identity(&who);
        let o = run_mode(&f, &who, "longjmp");
        assert_eq!(o.code, Some(0), "{}\n{o}", who.label());
        assert!(
            o.probe_number("signals") >= 20,
            "{}: too few signals\n{o}",
            who.label()
        );
        let grew = o.probe_number("maps_grew");
        assert!(
            grew <= 4,
            "{}: {grew} mappings left behind\n{o}",
            who.label()
        );
    }
}
