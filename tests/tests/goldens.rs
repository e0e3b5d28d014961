//! Translation goldens: each `tests/fixtures/goldens/X.cu` translates to
//! exactly `X.hip` beside it. `UPDATE_GOLDENS=1 cargo test -p candle-rocm-tests --test goldens`
//! rewrites the expected files (then review the diff).

use candle_rocm_tests::{fixture, translate_fixture};

#[test]
fn goldens_match() {
    let dir = fixture("goldens");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "cu")).collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no goldens in {}", dir.display());
    for input in inputs {
        let name = input.file_name().unwrap().to_str().unwrap();
        let out = translate_fixture(&format!("goldens/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"));
        let produced = out.files.iter().find(|f| f.rel_path.ends_with(".hip")).expect("a .hip output");
        let expected_path = input.with_extension("hip");
        if std::env::var_os("UPDATE_GOLDENS").is_some() {
            std::fs::write(&expected_path, &produced.contents).unwrap();
        }
        let expected = std::fs::read(&expected_path).unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDENS=1)", expected_path.display()));
        assert_eq!(String::from_utf8_lossy(&produced.contents), String::from_utf8_lossy(&expected), "{name}");
    }
}

#[test]
fn translation_is_idempotent_on_its_own_output() {
    // The native rules must leave HIP code alone (this is what makes the
    // output independent of a hipify-perl first pass).
    let out = translate_fixture("goldens/all_rules.cu").unwrap();
    let once = out.files.iter().find(|f| f.rel_path.ends_with(".hip")).unwrap();
    // drop the provenance line and prelude include the first pass added
    let text = String::from_utf8(once.contents.clone()).unwrap();
    let body: String = text.lines().skip(2).map(|l| format!("{l}\n")).collect();
    let ctx = translator::kernels::KernelContext::new("candle-kernels (test fixture)");
    let again = translator::kernels::translate_tree(&[translator::TreeFile { rel_path: "all_rules.cu".into(), contents: body.into_bytes() }], &ctx).unwrap();
    let twice = again.files.iter().find(|f| f.rel_path.ends_with(".hip")).unwrap();
    assert_eq!(String::from_utf8_lossy(&twice.contents), text);
}
