//! The test executables in cargo's JSON messages (`cargo test --no-run
//! --message-format=json…`), for the commands that build test binaries to
//! check or carry them (`gpu_bundle`, `rocm::backend`).

use std::path::PathBuf;

/// One test executable: `TARGET-lib` for a library's unit tests, else the target's name.
#[derive(Debug, PartialEq, Eq)]
pub struct TestArtifact {
    pub name: String,
    pub path: PathBuf,
}

/// Every `compiler-artifact` message of the test profile that names an executable.
pub fn test_artifacts(json_lines: &str) -> Vec<TestArtifact> {
    let mut found = Vec::new();
    for line in json_lines.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] != true {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else { continue };
        let target = msg["target"]["name"].as_str().unwrap_or("test");
        let is_lib = msg["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "lib"));
        let name = if is_lib { format!("{target}-lib") } else { target.to_string() };
        found.push(TestArtifact { name, path: PathBuf::from(exe) });
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_executables_come_from_test_profile_artifact_messages() {
        let json = r#"{"reason":"compiler-artifact","profile":{"test":true},"target":{"name":"tensor_tests","kind":["test"]},"executable":"/t/deps/tensor_tests-1"}
{"reason":"compiler-artifact","profile":{"test":true},"target":{"name":"candle_core","kind":["lib"]},"executable":"/t/deps/candle_core-2"}
{"reason":"compiler-artifact","profile":{"test":false},"target":{"name":"build-script-build","kind":["custom-build"]},"executable":"/t/build/x"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":null}
{"reason":"build-script-executed"}
not json"#;
        let found = super::test_artifacts(json);
        let names: Vec<(&str, &str)> = found.iter().map(|a| (a.name.as_str(), a.path.to_str().unwrap())).collect();
        assert_eq!(names, [("tensor_tests", "/t/deps/tensor_tests-1"), ("candle_core-lib", "/t/deps/candle_core-2")]);
    }
}
