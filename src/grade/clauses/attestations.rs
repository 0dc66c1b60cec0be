//! §7.2.1: what cannot be measured and the lab attests.

use super::*;

/// §7.2.1: what the lab attests.
pub(super) fn attestations(p: &Profile) -> Found {
    let mut f = Found::default();
    let att = &p.attestations;
    for (title, v) in [
        ("Installation package", &att.installation_package),
        ("C/C++ inference library", &att.cpp_library),
        ("Container run image", &att.container_run_image),
        ("Container build image", &att.container_build_image),
    ] {
        let v = v.as_ref().filter(|s| !s.trim().is_empty());
        f.add(
            "§7.2.1",
            title,
            "present (cannot be measured; attested by the lab)",
            v.cloned().unwrap_or_else(|| "not attested".into()),
            if v.is_some() {
                Verdict::Attested
            } else {
                Verdict::NotApplicable
            },
            if v.is_some() {
                None
            } else {
                na("not attested in the profile's [attestations]")
            },
            Source::Standard,
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn attested_when_the_lab_says_so_else_not_applicable() {
        let (mut p, _, _) = fixture();
        assert_eq!(
            verdict(&attestations(&p), "Installation package"),
            Verdict::NotApplicable
        );
        p.attestations.installation_package = Some("acceval 0.1.0 .deb".into());
        assert_eq!(
            verdict(&attestations(&p), "Installation package"),
            Verdict::Attested
        );
        p.attestations.cpp_library = Some("  ".into());
        assert_eq!(
            verdict(&attestations(&p), "C/C++ inference library"),
            Verdict::NotApplicable
        );
    }
}
