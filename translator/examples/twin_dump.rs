fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let m = translator::backend::twin_file("x", "x", &text).unwrap();
    std::fs::write(&args[2], m.text).unwrap();
}
