# A static library of one folder's sources whose headers are included from
# `root` (compiler/ or runtime/) as "folder/file.h", linking `DEPS`.
function(avf_folder_library name root)
  cmake_parse_arguments(P "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${P_SOURCES})
  target_include_directories(${name} PUBLIC ${root})
  target_link_libraries(${name} PUBLIC ${P_DEPS})
endfunction()
