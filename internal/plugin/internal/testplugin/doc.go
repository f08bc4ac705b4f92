// Command testplugin is the plugin binary the internal/plugin tests run. One
// binary plays every part: the tests link it under different names and the
// name (os.Args[0]) picks the behaviour, so a single build covers the good
// plugin and each way a plugin can go wrong.
package main
