// libsystemc provides a main() that calls sc_main(); this project's programs
// have their own main() and drive the kernel through Simulation, but the
// shared library still needs the symbol to link. Compiled into every program
// that links the simulator (an interface source of the library).
extern "C" int sc_main(int, char*[]) { return 1; }
