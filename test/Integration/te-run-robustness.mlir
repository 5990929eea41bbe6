// te-run on bad input (issue 17): every malformed .npy file, module info or
// library file gives a clear error naming the file and the field and a
// non-zero exit, never a crash, an unbounded allocation or a wrong answer;
// empty tensors (a zero token count) run; generated inputs meet the
// recipe's alignment.
//
// RUN: rm -rf %t && mkdir -p %t/bad %t/zero
// RUN: te-compile %s --train -o %t/lin.so
//
// .npy files: a strict parser of NumPy's header grammar, sizes checked
// against the file before anything is allocated (the 192-byte file below
// declares 16 GiB: te-run fails, naming it, with a peak RSS under 1 GB).
// RUN: %python %S/Inputs/bad_npy.py %t/bad
// RUN: %python -c "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); print(p.returncode, p.stderr.strip(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1000000)" te-run %t/lin.so --entry lin --input arg0=%t/bad/huge.npy --random 1 | FileCheck %s --check-prefix=HUGE
// HUGE: 1 te-run: error: '{{.*}}huge.npy': truncated data: shape (65536, 65536) of float32 needs 17179869184 bytes, the file has 64 after the header True
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/overflow.npy 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// OVERFLOW: te-run: error: '{{.*}}overflow.npy': header field 'shape': (4294967296, 4294967296) has more elements than fit in int64
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/float_dim.npy 2>&1 | FileCheck %s --check-prefix=FLOATDIM
// FLOATDIM: te-run: error: '{{.*}}float_dim.npy': malformed header field 'shape': dim 0 is '8.0', not a non-negative integer (at byte 51 of the header)
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/neg_dim.npy 2>&1 | FileCheck %s --check-prefix=NEGDIM
// NEGDIM: te-run: error: '{{.*}}neg_dim.npy': malformed header field 'shape': dim 0 is '-1', not a non-negative integer
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/int_not_tuple.npy 2>&1 | FileCheck %s --check-prefix=NOTUPLE
// NOTUPLE: te-run: error: '{{.*}}int_not_tuple.npy': malformed header field 'shape': a one-dim shape needs a trailing comma, e.g. (8,)
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/dup.npy 2>&1 | FileCheck %s --check-prefix=DUP
// DUP: te-run: error: '{{.*}}dup.npy': malformed header: duplicate key 'descr'
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/extra_key.npy 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: te-run: error: '{{.*}}extra_key.npy': malformed header: unknown key 'x' (a .npy header has 'descr', 'fortran_order' and 'shape')
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/no_shape.npy 2>&1 | FileCheck %s --check-prefix=NOSHAPE
// NOSHAPE: te-run: error: '{{.*}}no_shape.npy': malformed header: missing key 'shape'
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/unterminated.npy 2>&1 | FileCheck %s --check-prefix=UNTERM
// UNTERM: te-run: error: '{{.*}}unterminated.npy': malformed header: unterminated dict (no closing '}')
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/garbage.npy 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: te-run: error: '{{.*}}garbage.npy': malformed header: trailing characters after the header dict
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/order.npy 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: te-run: error: '{{.*}}order.npy': malformed header field 'fortran_order': expected True or False, got 'Maybe'
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/trailing.npy 2>&1 | FileCheck %s --check-prefix=TRAILING
// TRAILING: te-run: error: '{{.*}}trailing.npy': trailing bytes after the data: shape (8,) of float32 needs 32 bytes, the file has 36 after the header
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/short.npy 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: te-run: error: '{{.*}}short.npy': truncated data: shape (8,) of float32 needs 32 bytes, the file has 28 after the header
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/header_len.npy 2>&1 | FileCheck %s --check-prefix=HLEN
// HLEN: te-run: error: '{{.*}}header_len.npy': truncated header (the header length says 4096 bytes, the file has 8 after it)
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/u8.npy 2>&1 | FileCheck %s --check-prefix=U8
// U8: te-run: error: '{{.*}}u8.npy' holds uint8 (a quantized tensor's bytes) but the argument is float32
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: te-run: error: cannot read '{{.*}}bad': not a regular file
// A version 2.0 file is read; the dims it binds (d0 = 5) size the random
// inputs of the other arguments.
// RUN: te-run %t/lin.so --entry lin --input arg0=%t/bad/v2.npy --random 1 --outputs %t/v2
// RUN: %python -c "import numpy as n; print(n.load('%t/v2/result0.npy').shape)" | FileCheck %s --check-prefix=V2
// V2: (5, 32)
//
// A library changed after te-compile wrote it (one byte of its module info's
// JSON, as a bad copy or a hand edit would): the checksum te-compile appends
// (te/Runtime/ModuleInfoDigest.h) no longer matches, refused before dlopen.
// Without the trailer (a library of an older te-compile) the module info's
// own digest still catches the edit; a trailer whose magic was damaged is
// refused as such (the checksum would go unchecked); a damaged symbol value
// (unchecked library) that points outside the library's code is refused
// before the call (it segfaulted te-run).
// RUN: %python %S/Inputs/damage_library.py %t/lin.so %t/edited.so edit-info
// RUN: not te-run %t/edited.so --list 2>&1 | FileCheck %s --check-prefix=EDITED
// EDITED: te-run: error: cannot load '{{.*}}edited.so': its bytes do not match the checksum te-compile recorded (damaged or edited after compilation: digest {{[0-9a-f]+}}, recorded {{[0-9a-f]+}}); compile it again
// RUN: %python %S/Inputs/damage_library.py %t/edited.so %t/edited_old.so strip-trailer
// RUN: not te-run %t/edited_old.so --list 2>&1 | FileCheck %s --check-prefix=EDITEDOLD
// EDITEDOLD: te-run: error: '{{.*}}edited_old.so': its module info does not match the digest te-compile recorded (edited or damaged after compilation: digest {{[0-9a-f]+}}, recorded {{[0-9a-f]+}}); compile it again
// RUN: %python %S/Inputs/damage_library.py %t/lin.so %t/magic.so bad-magic
// RUN: not te-run %t/magic.so --list 2>&1 | FileCheck %s --check-prefix=MAGIC
// MAGIC: te-run: error: cannot load '{{.*}}magic.so': 16 bytes after the ELF image are not te-compile's checksum trailer (damaged?); compile it again
// RUN: %python %S/Inputs/damage_library.py %t/lin.so %t/symval.so symbol te_module_info_digest 0x3c00000
// RUN: not te-run %t/symval.so --list 2>&1 | FileCheck %s --check-prefix=SYMVALUE
// SYMVALUE: te-run: error: '{{.*}}symval.so': its symbol te_module_info_digest points outside the library's code (a damaged symbol table?); compile it again
// RUN: %python %S/Inputs/damage_library.py %t/lin.so %t/plain.so strip-trailer
// RUN: te-run %t/plain.so --entry lin --random 1 | FileCheck %s --check-prefix=PLAIN
// PLAIN: te-run: lin: 1 results on cpu
//
// Module info: validated before use, messages naming the field.
// RUN: %python %S/Inputs/fake_library.py %t/bigdim.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[9.2233720368547758e18,4]}],"results":[],"dims":[],"arena_bytes":0}]}'
// RUN: not te-run %t/bigdim.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=BIGDIM
// BIGDIM: te-run: error: '{{.*}}bigdim.so': malformed module info: entries[0].args[0].shape[0]: 9.2233720368547758e+18 is neither a non-negative integer nor a string (a dim symbol or expression)
// RUN: %python %S/Inputs/fake_library.py %t/junk.so --info-text 'garbage'
// RUN: not te-run %t/junk.so --list 2>&1 | FileCheck %s --check-prefix=JUNKINFO
// JUNKINFO: te-run: error: '{{.*}}junk.so': malformed module info: unexpected character at offset 0
// RUN: %python %S/Inputs/fake_library.py %t/noargs.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f"}]}'
// RUN: not te-run %t/noargs.so --list 2>&1 | FileCheck %s --check-prefix=NOARGS
// NOARGS: te-run: error: '{{.*}}noargs.so': malformed module info: entries[0].args: missing, or not an array
// RUN: %python %S/Inputs/fake_library.py %t/dtype.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float64","shape":[4]}],"results":[],"dims":[],"arena_bytes":0}]}'
// RUN: not te-run %t/dtype.so --list 2>&1 | FileCheck %s --check-prefix=BADDTYPE
// BADDTYPE: te-run: error: '{{.*}}dtype.so': malformed module info: entries[0].args[0].dtype: 'float64' is not float32, bfloat16, float16 or qtensor
// RUN: %python %S/Inputs/fake_library.py %t/unbound.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4]}],"results":[{"dtype":"float32","shape":["d0"]}],"dims":[{"arg":0,"dim":0}],"arena_bytes":0}]}'
// RUN: not te-run %t/unbound.so --list 2>&1 | FileCheck %s --check-prefix=UNBOUND
// UNBOUND: te-run: error: '{{.*}}unbound.so': malformed module info: entries[0].dims[0]: argument 0 dim 0 is 4, not the symbol d0
// RUN: %python %S/Inputs/fake_library.py %t/sym.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0"]}],"results":[{"dtype":"float32","shape":["d1*2"]}],"dims":[{"arg":0,"dim":0}],"arena_bytes":0}]}'
// RUN: not te-run %t/sym.so --list 2>&1 | FileCheck %s --check-prefix=SYMBOL
// SYMBOL: te-run: error: malformed dim expression 'd1*2' at column 3: unknown dim symbol 'd1' (the entry has 1 dim symbols) (in the module info of '{{.*}}sym.so', entries[0].results[0].shape[0])
// The alignment rules (checks) and the arena symbol, when present, are
// validated too: a rule's expression in the shapes' grammar, a positive
// multiple, a message; an arena symbol the library must export.
// RUN: %python %S/Inputs/fake_library.py %t/checks1.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0"]}],"results":[],"dims":[{"arg":0,"dim":0}],"arena_bytes":0,"checks":{}}]}'
// RUN: not te-run %t/checks1.so --list 2>&1 | FileCheck %s --check-prefix=CHECKS1
// CHECKS1: te-run: error: '{{.*}}checks1.so': malformed module info: entries[0].checks: not an array
// RUN: %python %S/Inputs/fake_library.py %t/checks2.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0"]}],"results":[],"dims":[{"arg":0,"dim":0}],"arena_bytes":0,"checks":[{"expr":"d1","multiple":8,"message":"m"}]}]}'
// RUN: not te-run %t/checks2.so --list 2>&1 | FileCheck %s --check-prefix=CHECKS2
// CHECKS2: te-run: error: malformed dim expression 'd1' at column 3: unknown dim symbol 'd1' (the entry has 1 dim symbols) (in the module info of '{{.*}}checks2.so', entries[0].checks[0].expr)
// RUN: %python %S/Inputs/fake_library.py %t/checks3.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0"]}],"results":[],"dims":[{"arg":0,"dim":0}],"arena_bytes":0,"checks":[{"expr":"d0","multiple":0,"message":"m"}]}]}'
// RUN: not te-run %t/checks3.so --list 2>&1 | FileCheck %s --check-prefix=CHECKS3
// CHECKS3: te-run: error: '{{.*}}checks3.so': malformed module info: entries[0].checks[0].multiple: 0 is not a positive integer
// RUN: %python %S/Inputs/fake_library.py %t/checks4.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0"]}],"results":[],"dims":[{"arg":0,"dim":0}],"arena_bytes":0,"checks":[{"expr":"d0","multiple":8}]}]}'
// RUN: not te-run %t/checks4.so --list 2>&1 | FileCheck %s --check-prefix=CHECKS4
// CHECKS4: te-run: error: '{{.*}}checks4.so': malformed module info: entries[0].checks[0].message: missing or not a string
// RUN: %python %S/Inputs/fake_library.py %t/arenasym.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[],"dims":[],"arena_bytes":0,"arena_symbol":"te_arena_bytes_f"}]}'
// RUN: not te-run %t/arenasym.so --list 2>&1 | FileCheck %s --check-prefix=ARENASYM
// ARENASYM: te-run: error: '{{.*}}arenasym.so' lacks the arena symbol te_arena_bytes_f
// padding_written (the results whose buffers an entry writes beyond their
// tensors), when present: distinct indices of results.
// RUN: %python %S/Inputs/fake_library.py %t/pw1.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"float32","shape":[4]}],"dims":[],"arena_bytes":0,"padding_written":{}}]}'
// RUN: not te-run %t/pw1.so --list 2>&1 | FileCheck %s --check-prefix=PW1
// PW1: te-run: error: '{{.*}}pw1.so': malformed module info: entries[0].padding_written: not an array
// RUN: %python %S/Inputs/fake_library.py %t/pw2.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"float32","shape":[4]}],"dims":[],"arena_bytes":0,"padding_written":[1]}]}'
// RUN: not te-run %t/pw2.so --list 2>&1 | FileCheck %s --check-prefix=PW2
// PW2: te-run: error: '{{.*}}pw2.so': malformed module info: entries[0].padding_written[0]: 1 is not a result (1 results)
// RUN: %python %S/Inputs/fake_library.py %t/pw3.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"float32","shape":[4]}],"dims":[],"arena_bytes":0,"padding_written":[0,0]}]}'
// RUN: not te-run %t/pw3.so --list 2>&1 | FileCheck %s --check-prefix=PW3
// PW3: te-run: error: '{{.*}}pw3.so': malformed module info: entries[0].padding_written[1]: result 0 listed twice
// RUN: %python %S/Inputs/fake_library.py %t/pw4.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"float32","shape":[4]}],"dims":[],"arena_bytes":0,"padding_written":[-1]}]}'
// RUN: not te-run %t/pw4.so --list 2>&1 | FileCheck %s --check-prefix=PW4
// PW4: te-run: error: '{{.*}}pw4.so': malformed module info: entries[0].padding_written[0]: -1 is not a non-negative integer
//
// A qtensor's keys on a plain tensor (the module_info fuzzer's: a float32
// argument with inner parts, one without a shape, that the fuzzer's walk
// read and the validation had let through).
// RUN: %python %S/Inputs/fake_library.py %t/qk1.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"float32","shape":[4],"inner":[{"name":"data","dtype":"uint8"}]}],"dims":[],"arena_bytes":0}]}'
// RUN: not te-run %t/qk1.so --list 2>&1 | FileCheck %s --check-prefix=QK1
// QK1: te-run: error: '{{.*}}qk1.so': malformed module info: entries[0].results[0].inner: only a qtensor has one ('float32' tensor)
// RUN: %python %S/Inputs/fake_library.py %t/qk2.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[{"dtype":"bfloat16","shape":[4],"alignment":256}],"dims":[],"arena_bytes":0}]}'
// RUN: not te-run %t/qk2.so --list 2>&1 | FileCheck %s --check-prefix=QK2
// QK2: te-run: error: '{{.*}}qk2.so': malformed module info: entries[0].results[0].alignment: only a qtensor has one ('bfloat16' tensor)
//
// state_in_place (the recipe state a caller may pass as one buffer), when
// present: [result, argument] pairs of one te.state, each index once; a
// valid one is listed by --list.
// RUN: %python %S/Inputs/fake_library.py %t/si1.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":{}}]}'
// RUN: not te-run %t/si1.so --list 2>&1 | FileCheck %s --check-prefix=SI1
// SI1: te-run: error: '{{.*}}si1.so': malformed module info: entries[0].state_in_place: not an array
// RUN: %python %S/Inputs/fake_library.py %t/si2.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[0]]}]}'
// RUN: not te-run %t/si2.so --list 2>&1 | FileCheck %s --check-prefix=SI2
// SI2: te-run: error: '{{.*}}si2.so': malformed module info: entries[0].state_in_place[0]: not a [result, argument] pair
// RUN: %python %S/Inputs/fake_library.py %t/si3.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[2,0]]}]}'
// RUN: not te-run %t/si3.so --list 2>&1 | FileCheck %s --check-prefix=SI3
// SI3: te-run: error: '{{.*}}si3.so': malformed module info: entries[0].state_in_place[0]: 2 is not a result (2 results)
// RUN: %python %S/Inputs/fake_library.py %t/si4.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[0,-1]]}]}'
// RUN: not te-run %t/si4.so --list 2>&1 | FileCheck %s --check-prefix=SI4
// SI4: te-run: error: '{{.*}}si4.so': malformed module info: entries[0].state_in_place[0][1]: -1 is not a non-negative integer
// RUN: %python %S/Inputs/fake_library.py %t/si5.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[0,1]]}]}'
// RUN: not te-run %t/si5.so --list 2>&1 | FileCheck %s --check-prefix=SI5
// SI5: te-run: error: '{{.*}}si5.so': malformed module info: entries[0].state_in_place[0]: result 0 and argument 1 are not the same te.state
// RUN: %python %S/Inputs/fake_library.py %t/si6.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[0,0],[0,0]]}]}'
// RUN: not te-run %t/si6.so --list 2>&1 | FileCheck %s --check-prefix=SI6
// SI6: te-run: error: '{{.*}}si6.so': malformed module info: entries[0].state_in_place[1]: a result or argument listed twice
// RUN: %python %S/Inputs/fake_library.py %t/si7.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"results":[{"dtype":"float32","shape":[4],"te.state":"s"},{"dtype":"float32","shape":[2],"te.state":"t"}],"dims":[],"arena_bytes":0,"state_in_place":[[1,1],[0,0]]}]}'
// RUN: te-run %t/si7.so --list 2>&1 | FileCheck %s --check-prefix=SI7
// SI7: state written in place: result0 over arg0, result1 over arg1
// RUN: %python %S/Inputs/fake_library.py %t/twice.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[],"dims":[],"arena_bytes":0},{"name":"f","symbol":"te_entry_g","args":[],"results":[],"dims":[],"arena_bytes":0}]}'
// RUN: not te-run %t/twice.so --list 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: te-run: error: '{{.*}}twice.so': malformed module info: entries[1].name: a second entry named 'f'
// RUN: %python %S/Inputs/fake_library.py %t/dupkey.so --info-text '{"entries":[],"entries":[]}'
// RUN: not te-run %t/dupkey.so --list 2>&1 | FileCheck %s --check-prefix=DUPKEY
// DUPKEY: te-run: error: '{{.*}}dupkey.so': malformed module info: duplicate key "entries" at offset 26
// RUN: %python %S/Inputs/fake_library.py %t/deep.so --info-text "$(%python -c "print('[' * 300)")"
// RUN: not te-run %t/deep.so --list 2>&1 | FileCheck %s --check-prefix=DEEP
// DEEP: te-run: error: '{{.*}}deep.so': malformed module info: more than 256 levels of nesting at offset 256
// RUN: %python %S/Inputs/fake_library.py %t/arena.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[],"results":[],"dims":[],"arena_bytes":-5}]}'
// RUN: not te-run %t/arena.so --list 2>&1 | FileCheck %s --check-prefix=ARENA
// ARENA: te-run: error: '{{.*}}arena.so': malformed module info: entries[0].arena_bytes: -5 is neither a non-negative integer nor "dynamic"
// RUN: %python %S/Inputs/fake_library.py %t/noinfo.so --no-info
// RUN: not te-run %t/noinfo.so --list 2>&1 | FileCheck %s --check-prefix=NOINFO
// NOINFO: te-run: error: '{{.*}}noinfo.so' is not a te-compile library (no te_module_info)
// RUN: %python %S/Inputs/fake_library.py %t/nullinfo.so --null-info
// RUN: not te-run %t/nullinfo.so --list 2>&1 | FileCheck %s --check-prefix=NULLINFO
// NULLINFO: te-run: error: '{{.*}}nullinfo.so': malformed module info: te_module_info() returned NULL
//
// Sizes from the module info are checked before te-run allocates: a
// recipe state of 2^40 x 4 floats (an amax history 2^40 long) is refused,
// not an uncaught std::bad_alloc.
// RUN: %python %S/Inputs/fake_library.py %t/state.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0",4]},{"dtype":"float32","shape":[1099511627776,4],"te.state":"m.amax_history_fwd"}],"results":[],"dims":[{"arg":0,"dim":0}],"arena_bytes":0}]}'
// RUN: not te-run %t/state.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=STATE
// STATE: te-run: error: the initial recipe state 'm.amax_history_fwd' needs 17592186044416 bytes, more than this machine's memory ({{[0-9]+}} bytes of RAM and swap)
// RUN: %python %S/Inputs/fake_library.py %t/result.so --info-text '{"entries":[{"name":"f","symbol":"te_entry_f","args":[{"dtype":"float32","shape":["d0",4]}],"results":[{"dtype":"float32","shape":["d0*100000000000000000*100"]}],"dims":[{"arg":0,"dim":0}],"arena_bytes":0}]}'
// RUN: not te-run %t/result.so --entry f --random 1 2>&1 | FileCheck %s --check-prefix=RESULT
// RESULT: te-run: error: dim expression 'd0*100000000000000000*100' overflows int64
//
// Library files are checked before dlopen: a library cut to 4000 bytes
// (SIGBUS inside dlopen before), an empty file, a directory.
// RUN: head -c 4000 %t/lin.so > %t/cut.so
// RUN: not te-run %t/cut.so --list 2>&1 | FileCheck %s --check-prefix=CUT
// CUT: te-run: error: cannot load '{{.*}}cut.so': PT_LOAD segment {{[0-9]+}} (file bytes {{[0-9]+}}..{{[0-9]+}}) ends past the end of the file (4000 bytes)
// RUN: head -c 100 %t/lin.so > %t/cut100.so
// RUN: not te-run %t/cut100.so --list 2>&1 | FileCheck %s --check-prefix=CUT100
// CUT100: te-run: error: cannot load '{{.*}}cut100.so': the program header table (file bytes 64..{{[0-9]+}}) ends past the end of the file (100 bytes)
// RUN: : > %t/empty.so
// RUN: not te-run %t/empty.so --list 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: te-run: error: cannot load '{{.*}}empty.so': not an ELF file (bad magic)
// RUN: not te-run %t --list 2>&1 | FileCheck %s --check-prefix=NOTFILE
// NOTFILE: te-run: error: cannot load '{{.*}}': not a regular file
//
// Empty tensors: zero tokens run, with empty results and zero weight
// gradients (PyTorch's answer), in f32 and through the fused FP8 norm-cast
// (fp8-current) and NVFP4 (TE's zero-token steps: its quantizer and GEMM take
// zero rows).
// RUN: %python -c "import numpy as n; n.save('%t/zero/x.npy', n.zeros((0, 64), 'f4')); n.save('%t/zero/w.npy', n.ones((32, 64), 'f4')); n.save('%t/zero/xb.bf16.npy', n.zeros((0, 128), 'u2'))"
// RUN: te-run %t/lin.so --step lin --input arg0=%t/zero/x.npy --input arg1=%t/zero/w.npy --random 1 --outputs %t/zero/lin
// RUN: %python -c "import numpy as n; d = '%t/zero/lin/'; print(n.load(d + 'fwd/result0.npy').shape, n.load(d + 'bwd/grad_arg0.npy').shape, n.load(d + 'bwd/grad_arg1.npy').shape, float(abs(n.load(d + 'bwd/grad_arg1.npy')).max()))" | FileCheck %s --check-prefix=ZEROLIN
// ZEROLIN: (0, 32) (0, 64) (32, 64) 0.0
// RUN: te-compile %S/Inputs/ln_mlp_dynamic_bf16.mlir --train --recipe=fp8-current -o %t/f8.so
// RUN: te-run %t/f8.so --step mlp --input arg0=%t/zero/xb.bf16.npy --random 1 --outputs %t/zero/f8
// RUN: %python -c "import os, numpy as n; d = '%t/zero/f8/bwd/'; g = [n.load(d + f) for f in sorted(os.listdir(d))]; print(n.load('%t/zero/f8/fwd/result0.bf16.npy').shape, len(g), [a.shape[0] for a in g], all(not a.any() for a in g))" | FileCheck %s --check-prefix=ZEROF8
// ZEROF8: (0, 128) 7 [0, 128, 128, 256, 256, 128, 128] True
// RUN: te-compile %S/Inputs/ln_mlp_dynamic_bf16.mlir --train --recipe=nvfp4 --arch=sm_100a -o %t/nv.so
// RUN: te-run %t/nv.so --step mlp --input arg0=%t/zero/xb.bf16.npy --random 1 --outputs %t/zero/nv
// RUN: %python -c "import os, numpy as n; d = '%t/zero/nv/bwd/'; g = [n.load(d + f) for f in sorted(os.listdir(d))]; print(n.load('%t/zero/nv/fwd/result0.bf16.npy').shape, len(g), [a.shape[0] for a in g], all(not a.any() for a in g))" | FileCheck %s --check-prefix=ZERONV
// ZERONV: (0, 128) 7 [0, 128, 128, 256, 256, 128, 128] True
//
// --random on dynamic block-scaled libraries: the token count meets the
// recipe's alignment (MXFP8 32, NVFP4 16) instead of the default 8: from
// the inner layouts of the training entries' quantized tensors, or from the
// entry's own alignment check (inference entries), with a note.
// RUN: te-run %t/nv.so --entry mlp --random 1 --outputs %t/nvi 2>&1 | FileCheck %s --check-prefix=NVI
// NVI: te-run: note: mlp: generating inputs with d0 = 16 (mlp: recipe nvfp4 needs d0 % 16 == 0, got 8)
// NVI: te-run: mlp: 1 results on cpu
// RUN: te-compile %S/Inputs/ln_mlp_dynamic_bf16.mlir --recipe=mxfp8 --arch=sm_100a -o %t/mx.so
// RUN: te-run %t/mx.so --entry mlp --random 1 --outputs %t/mxi 2>&1 | FileCheck %s --check-prefix=MXI
// MXI: te-run: note: mlp: generating inputs with d0 = 32 (mlp: recipe mxfp8 needs d0 % 32 == 0, got 8)
// MXI: te-run: mlp: 1 results on cpu
// RUN: te-compile %S/Inputs/ln_mlp_dynamic_bf16.mlir --train --recipe=mxfp8 --arch=sm_100a -o %t/mxt.so
// RUN: te-run %t/mxt.so --step mlp --random 1 --outputs %t/mxt
// RUN: te-compile %S/Inputs/ln_mlp_dynamic_bf16.mlir --train --recipe=nvfp4 --arch=sm_100a -o %t/nvt.so
// RUN: te-run %t/nvt.so --step mlp --random 1 --outputs %t/nvt
// RUN: %python -c "import numpy as n; print([n.load('%t/' + f).shape for f in ('nvi/result0.bf16.npy', 'mxi/result0.bf16.npy', 'mxt/fwd/result0.bf16.npy', 'mxt/bwd/grad_arg0.bf16.npy', 'nvt/fwd/result0.bf16.npy', 'nvt/bwd/grad_arg0.bf16.npy')])" | FileCheck %s --check-prefix=ALIGNED
// ALIGNED: [(16, 128), (32, 128), (32, 128), (32, 128), (16, 128), (16, 128)]
// Arguments te-run would otherwise ignore, or read as "no value": a
// directory that does not exist, the same argument given twice, --grads
// without --step.
// RUN: not te-run %t/lin.so --step lin --random 1 --grads %t/nonexistent 2>&1 | FileCheck %s --check-prefix=NOGRADS
// NOGRADS: te-run: error: --grads: no such directory '{{.*}}nonexistent'
// RUN: not te-run %t/lin.so --entry lin --inputs %t/lin.so 2>&1 | FileCheck %s --check-prefix=NOTDIR
// NOTDIR: te-run: error: --inputs: '{{.*}}lin.so' is not a directory
// RUN: not te-run %t/lin.so --entry lin --input arg0=%t/bad/v2.npy --input 0=%t/bad/v2.npy --random 1 2>&1 | FileCheck %s --check-prefix=INPUTTWICE
// INPUTTWICE: te-run: error: --input 0: lin arg0 {{.*}}is given twice
// RUN: not te-run %t/lin.so --entry lin --random 1 --grads %t/bad 2>&1 | FileCheck %s --check-prefix=GRADSENTRY
// GRADSENTRY: te-run: error: --grads gives a training step's output gradients: it needs --step (with --entry or --list it would be ignored)

func.func @lin(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>) -> tensor<?x32xf32> {
  %y = te.linear %x weight(%w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
