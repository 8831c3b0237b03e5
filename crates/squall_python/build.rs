fn main() {
    // Emits `Py_3_12` and friends: the recorder reads small ints' digits directly (see ints.rs).
    pyo3_build_config::use_pyo3_cfgs();
}
