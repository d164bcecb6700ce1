//! The seccomp profile: Docker's default plus the run profile's denials.

use crate::profile::{CLONE_NEW_MASK, ENOSYS, EPERM, SECCOMP_DENY};
use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};

/// Docker's default profile with [`SECCOMP_DENY`] removed from every allow rule (whatever
/// capability it is conditioned on), `clone` allowed only without `CLONE_NEW*` flags, `clone3`
/// answered with `ENOSYS` (so libc falls back to `clone`, whose flags a filter can read), and an
/// explicit `EPERM` rule naming each denial.
pub fn seccomp_profile(default: &Value) -> Result<Value> {
    let mut profile = default.clone();
    let obj = profile
        .as_object_mut()
        .context("the default profile is not a JSON object")?;
    if obj.get("defaultAction").and_then(Value::as_str) != Some("SCMP_ACT_ERRNO") {
        bail!("the default profile does not deny by default: refusing to build on it");
    }
    let rules = obj
        .get_mut("syscalls")
        .and_then(Value::as_array_mut)
        .context("the default profile has no syscalls list")?;
    let mut out = Vec::new();
    let mut saw_filtered_clone = false;
    for rule in rules.drain(..) {
        let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
        let mut names: Vec<String> = rule
            .get("names")
            .and_then(Value::as_array)
            .context("a rule without names")?
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        let has_args = rule
            .get("args")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if action != "SCMP_ACT_ALLOW" {
            // Docker's own refusals (clone3 → ENOSYS) are replaced by ours below.
            names.retain(|n| n != "clone3");
        } else {
            names.retain(|n| !SECCOMP_DENY.contains(&n.as_str()) && n != "clone3");
            if !has_args {
                // An unconditional clone is namespace creation; only the masked rule stays.
                names.retain(|n| n != "clone");
            } else if names.iter().any(|n| n == "clone") {
                if !clone_rule_masks_namespaces(&rule) {
                    names.retain(|n| n != "clone");
                } else {
                    saw_filtered_clone = true;
                }
            }
        }
        if names.is_empty() {
            continue;
        }
        let mut rule = rule;
        rule["names"] = json!(names);
        if names.iter().any(|n| n == "clone") {
            // The masked clone rule must hold whatever capabilities the session is given.
            if let Some(ex) = rule.get_mut("excludes").and_then(Value::as_object_mut) {
                ex.remove("caps");
            }
        }
        out.push(rule);
    }
    if !saw_filtered_clone {
        bail!("the default profile has no clone rule masking CLONE_NEW* flags: unknown format");
    }
    out.push(json!({
        "names": ["clone3"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": ENOSYS,
        "comment": "execguard: clone3 flags live in memory a filter cannot read; libc falls back to clone",
    }));
    out.push(json!({
        "names": SECCOMP_DENY,
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": EPERM,
        "comment": "execguard: ptrace, cross-process memory, userfaultfd, perf, bpf, keyrings, namespaces",
    }));
    *rules = out;
    Ok(profile)
}

/// Is this `clone` rule `(flags & CLONE_NEW_MASK) == 0`?
pub(crate) fn clone_rule_masks_namespaces(rule: &Value) -> bool {
    rule.get("args")
        .and_then(Value::as_array)
        .is_some_and(|args| {
            args.iter().any(|a| {
                a.get("op").and_then(Value::as_str) == Some("SCMP_CMP_MASKED_EQ")
                    && a.get("value").and_then(Value::as_u64) == Some(CLONE_NEW_MASK)
                    && a.get("valueTwo").and_then(Value::as_u64).unwrap_or(0) == 0
            })
        })
}
