// The one translation unit that holds Boost.Asio's and Boost.Beast's compiled implementation
// (CMakeLists.txt says why).
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
