//! A Model Context Protocol server over a catalog (skills, the prompt block, script tools).
