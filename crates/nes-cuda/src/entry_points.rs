//! The kernels' entry points as text: each `extern "C" __global__` function of a kernel source
//! tree, reduced to its name and its parameters' types, e.g.
//! `nesle_gather_ram(const u8*, u32, u8*, u32)`.
//!
//! The launches pass their arguments by position with no types attached, so kernels whose
//! parameters differ from the ones the library was built with still load and run, on wrong
//! arguments, and give wrong states without an error. build.rs records the list of the kernels
//! it compiles; the run-time compile (`NESLE_KERNEL_SOURCE`) refuses a tree whose list differs.
//! Parameter names, launch bounds, comments and spacing are not part of the list: changing them
//! changes no launch.
//!
//! Used by build.rs (through `#[path]`) and by the library, so both read a tree alike.

use std::path::Path;

/// The entry points of the `.cu` and `.cuh` files in `dir`, sorted.
pub fn of_dir(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && matches!(ext, "cu" | "cuh") {
            all.extend(of_source(&std::fs::read_to_string(&path)?));
        }
    }
    all.sort();
    Ok(all)
}

/// The entry points declared or defined in one source text, in order.
pub fn of_source(text: &str) -> Vec<String> {
    let text = without_comments(text);
    const MARK: &str = "extern \"C\" __global__";
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(MARK) {
        rest = &rest[at + MARK.len()..];
        // The signature runs to the body or to the declaration's end.
        let end = rest.find(['{', ';']).unwrap_or(rest.len());
        if let Some(sig) = signature(&rest[..end]) {
            found.push(sig);
        }
    }
    found
}

/// `name(types)` from `[bounds] void name(params)`: the last parenthesized group is the
/// parameter list (launch bounds come before the name), the identifier before it the name.
fn signature(head: &str) -> Option<String> {
    let head = head.trim_end();
    let close = head.strip_suffix(')')?;
    let mut depth = 0usize;
    let mut open = None;
    for (i, c) in close.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => {
                open = Some(i);
                break;
            }
            '(' => depth -= 1,
            _ => {}
        }
    }
    let open = open?;
    let before = close[..open].trim_end();
    let name_start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = &before[name_start..];
    let params = &close[open + 1..];
    let types: Vec<String> = params.split(',').map(param_type).filter(|t| !t.is_empty()).collect();
    (!name.is_empty()).then(|| format!("{name}({})", types.join(", ")))
}

/// A parameter's type: `const u8* prg` -> `const u8*` (the name dropped, spacing made one).
fn param_type(param: &str) -> String {
    let p = param.split_whitespace().collect::<Vec<_>>().join(" ");
    let p = p.replace(" *", "*");
    // The name is the trailing identifier after a space or a `*`; a lone word (`void`) is a type.
    match p.rfind([' ', '*']) {
        Some(i) if p[i + 1..].chars().all(|c| c.is_alphanumeric() || c == '_') => p[..=i].trim_end().to_string(),
        _ => p,
    }
}

/// The text with `//` and `/* */` comments blanked (no kernel string literal holds either).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        let (at, end) = match (line, block) {
            (None, None) => break,
            (Some(l), Some(b)) if b < l => (b, rest[b..].find("*/").map(|e| b + e + 2)),
            (None, Some(b)) => (b, rest[b..].find("*/").map(|e| b + e + 2)),
            (Some(l), _) => (l, rest[l..].find('\n').map(|e| l + e)),
        };
        out.push_str(&rest[..at]);
        out.push(' ');
        rest = end.map_or("", |e| &rest[e..]);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_keeps_types_and_drops_names_bounds_and_comments() {
        let src = "// extern \"C\" __global__ void commented(int a) {}\n\
                   extern \"C\" __global__ void __launch_bounds__(LINES_WARPS * 32) k(const u8* states,\n\
                       u32   stride, /* a note */ LineLog *lines) { body(); }\n\
                   extern \"C\" __global__ void NESLE_STEP_BOUNDS s(u8* st, u32 n);\n\
                   extern \"C\" __global__ void none() {}";
        assert_eq!(of_source(src), ["k(const u8*, u32, LineLog*)", "s(u8*, u32)", "none()"]);
    }

    #[test]
    fn an_added_or_retyped_parameter_changes_the_list_and_a_renamed_one_does_not() {
        let base = of_source("extern \"C\" __global__ void f(u8* states, u32 n) {}");
        let renamed = of_source("extern \"C\" __global__ void f(u8* s, u32 count) {}");
        let added = of_source("extern \"C\" __global__ void f(u8* states, const u32* code, u32 n) {}");
        let retyped = of_source("extern \"C\" __global__ void f(u8* states, u64 n) {}");
        assert_eq!(base, renamed);
        assert_ne!(base, added);
        assert_ne!(base, retyped);
    }

    #[test]
    fn the_kernels_folder_reads_as_the_build_recorded_it_with_every_entry_point() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
        let list = of_dir(&dir).unwrap();
        assert_eq!(list, crate::launch::built_entry_points());
        // None was skipped: as many as the tree's files declare.
        let mut declared = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if matches!(path.extension().and_then(|e| e.to_str()), Some("cu" | "cuh")) {
                declared += std::fs::read_to_string(&path).unwrap().matches("extern \"C\" __global__").count();
            }
        }
        assert_eq!(list.len(), declared, "{list:?}");
        assert!(list.iter().any(|s| s.starts_with("nesle_step(u8*, u32, u32, const u8*")), "{list:?}");
    }
}
