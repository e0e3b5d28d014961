fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (src, out) = (&args[1], &args[2]);
    let mut sources = std::collections::BTreeMap::new();
    fn walk(root: &std::path::Path, dir: &std::path::Path, m: &mut std::collections::BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() { walk(root, &p, m) } else if p.extension().is_some_and(|x| x == "rs") {
                m.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    walk(std::path::Path::new(src), &std::path::Path::new(src).join("src"), &mut sources);
    let m = translator::backend::mirror_crate(&sources, "x").unwrap_or_else(|e| panic!("{e}"));
    for (p, t) in &m.files {
        let dst = std::path::Path::new(out).join(p);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(dst, t).unwrap();
    }
    eprintln!("counts {:?}\nunmapped {:?}", m.rule_counts, m.unmapped);
    for g in &m.gaps { eprintln!("gap {}:{} {} [{}]", g.file, g.line, g.construct, g.feature); }
}
