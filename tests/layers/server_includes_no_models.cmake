# The server is a front door on the engine: what it needs of a model (a VAD rate, Piper's sample
# conversion, the segmenter's parameters) it gets from the engine's and the audio layer's public
# API, so that an engine that changes its models changes no server file. The include paths cannot
# say so (the engine's public headers include models' headers, so the server sees them): this
# script fails, naming each line, if a file under src/server includes a header of models/.
#   cmake -DSERVER_DIR=<src/server> -P server_includes_no_models.cmake
file(GLOB_RECURSE files "${SERVER_DIR}/*.h" "${SERVER_DIR}/*.cpp")
set(found "")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](brisvox/)?models/")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH rel "${SERVER_DIR}" "${f}")
    string(APPEND found "\n  src/server/${rel}: ${line}")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "src/server includes headers of the models layer (use the engine's API):${found}")
endif()
list(LENGTH files n)
message(STATUS "${n} files under src/server, none includes models/")
